package engine

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// TestCheckTree damages the pages a real store's meta page leads to, the
// ways that send bbolt round in circles or out of its file.
func TestCheckTree(t *testing.T) {
	good := storeBytes(t, 60)
	ps := uint64(os.Getpagesize())
	ne := binary.NativeEndian
	m0, _ := parseMeta(good)
	m1, _ := parseMeta(good[ps:])
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	page := func(b []byte, id uint64) []byte { return b[id*ps:] }
	elem := func(b []byte, id, i uint64) []byte { return page(b, id)[boltPageHeader+i*boltElement:] }
	// The root bucket's leaf holds one element per bucket; the sandboxes
	// bucket of 60 records spans pages, so its root is a branch page.
	rootLeaf, sandboxesElem := m.root, uint64(0)
	for ; sandboxesElem < uint64(ne.Uint16(page(good, rootLeaf)[10:])); sandboxesElem++ {
		e := elem(good, rootLeaf, sandboxesElem)
		if string(e[ne.Uint32(e[4:]):][:ne.Uint32(e[8:])]) == string(bucketSandboxes) {
			break
		}
	}
	e := elem(good, rootLeaf, sandboxesElem)
	bucketValue := e[ne.Uint32(e[4:])+ne.Uint32(e[8:]):] // its header: root page, sequence
	branch := ne.Uint64(bucketValue)
	if branch == 0 || ne.Uint16(page(good, branch)[8:])&boltBranchPage == 0 {
		t.Fatalf("the sandboxes bucket's root (page %d) is not a branch page", branch)
	}
	with := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	cases := map[string]headerCase{
		"a sound store":                   {good, ""},
		"a branch's child is the branch":  {with(func(b []byte) { ne.PutUint64(elem(b, branch, 0)[8:], branch) }), "reaches page"},
		"a child past the pages in use":   {with(func(b []byte) { ne.PutUint64(elem(b, branch, 0)[8:], m.hwm+5) }), "outside its pages in use"},
		"a page claims another id":        {with(func(b []byte) { ne.PutUint64(page(b, branch), branch+1) }), "claiming to be page"},
		"a branch counts too many":        {with(func(b []byte) { ne.PutUint16(page(b, branch)[10:], 0xFFFE) }), "more than it holds"},
		"a branch without children":       {with(func(b []byte) { ne.PutUint16(page(b, branch)[10:], 0) }), "without children"},
		"overflow past the last page":     {with(func(b []byte) { ne.PutUint32(page(b, branch)[12:], 1<<30) }), "past its last page"},
		"a leaf element outside its page": {with(func(b []byte) { ne.PutUint32(elem(b, rootLeaf, 0)[4:], 1<<24) }), "lies outside it"},
		"a bucket rooted at a meta page": {with(func(b []byte) {
			e := elem(b, rootLeaf, sandboxesElem)
			ne.PutUint64(e[ne.Uint32(e[4:])+ne.Uint32(e[8:]):], 1)
		}), "outside its pages in use"},
		"a page neither branch nor leaf": {with(func(b []byte) { ne.PutUint16(page(b, branch)[8:], boltFreelistPage) }), "neither a branch nor a leaf"},
		"a free list counting too many": {with(func(b []byte) {
			ne.PutUint16(page(b, m.freelist)[10:], 0xFFFF)
			ne.PutUint64(page(b, m.freelist)[boltPageHeader:], 1<<40)
		}), "free list"},
	}
	runHeaderCases(t, cases)
}
