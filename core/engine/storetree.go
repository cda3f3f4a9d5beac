package engine

import (
	"encoding/binary"
	"fmt"
	"io"
)

// bbolt's page layout (go.etcd.io/bbolt internal/common): a 16-byte header
// (id, flags, count, overflow), then count 16-byte elements. A branch
// element is (pos, ksize, child page); a leaf element is (flags, pos,
// ksize, vsize); pos counts from the element itself. A leaf element with
// the bucket flag holds a bucket header (root page, sequence), followed by
// the bucket's own page when root is 0 (an inline bucket).
const (
	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltBucketLeaf   = 0x01
	boltElement      = 16
	boltBucketHeader = 16
	// boltMaxDepth bounds how deep buckets and branch pages nest: a B+tree
	// of our size is a few levels, nested buckets one or two.
	boltMaxDepth = 64
)

// checkTree walks, from the raw file, every page that bbolt's cursors and
// free list would read from the meta page m, before bbolt reads them: each
// page must lie among the pages in use, carry its own id and a kind that
// fits where it is referenced, hold its elements inside itself, and be
// reached once. A damaged file otherwise sends bbolt round a cycle of
// pages (a cursor's stack grows until the machine has no memory left) or
// to addresses outside the mapping.
func checkTree(r io.ReaderAt, pageSize int, m boltMeta) error {
	w := &treeWalk{r: r, pageSize: uint64(pageSize), pages: m.hwm, seen: map[uint64]bool{}}
	if m.freelist != boltNoFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	return w.node(m.root, 0)
}

type treeWalk struct {
	r        io.ReaderAt
	pageSize uint64
	pages    uint64 // the high water mark: pages in use
	seen     map[uint64]bool
}

// page reads page id with its overflow pages, after checking that they are
// in use and reached for the first time.
func (w *treeWalk) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.pages {
		return nil, fmt.Errorf("refers to page %d, outside its pages in use (2 to %d)", id, w.pages-1)
	}
	head := make([]byte, boltPageHeader)
	if _, err := w.r.ReadAt(head, int64(id*w.pageSize)); err != nil {
		return nil, fmt.Errorf("cannot read page %d: %v", id, err)
	}
	ne := binary.NativeEndian
	if got := ne.Uint64(head); got != id {
		return nil, fmt.Errorf("has page %d claiming to be page %d", id, got)
	}
	overflow := uint64(ne.Uint32(head[12:]))
	if overflow >= w.pages-id {
		return nil, fmt.Errorf("has page %d running %d pages past its last page in use", id, overflow)
	}
	for p := id; p <= id+overflow; p++ {
		if w.seen[p] {
			return nil, fmt.Errorf("reaches page %d twice (its pages form a cycle or overlap)", p)
		}
		w.seen[p] = true
	}
	buf := make([]byte, (1+overflow)*w.pageSize)
	if _, err := w.r.ReadAt(buf, int64(id*w.pageSize)); err != nil {
		return nil, fmt.Errorf("cannot read page %d: %v", id, err)
	}
	return buf, nil
}

func (w *treeWalk) freelist(id uint64) error {
	p, err := w.page(id)
	if err != nil {
		return err
	}
	ne := binary.NativeEndian
	if flags := ne.Uint16(p[8:]); flags&boltFreelistPage == 0 {
		return fmt.Errorf("has a free list page %d that is not one (flags %#x)", id, flags)
	}
	count, start := uint64(ne.Uint16(p[10:])), uint64(boltPageHeader)
	if count == 0xFFFF { // the real count is the first id
		count, start = ne.Uint64(p[boltPageHeader:]), boltPageHeader+8
	}
	if count > (uint64(len(p))-start)/8 {
		return fmt.Errorf("has a free list page %d counting %d ids, more than it holds", id, count)
	}
	return nil
}

// node checks a branch or leaf page of a bucket's tree and what it refers
// to: child pages, and the trees of nested buckets.
func (w *treeWalk) node(id uint64, depth int) error {
	if depth > boltMaxDepth {
		return fmt.Errorf("nests pages more than %d deep at page %d", boltMaxDepth, id)
	}
	p, err := w.page(id)
	if err != nil {
		return err
	}
	return w.elements(p, fmt.Sprintf("page %d", id), depth)
}

// elements checks the elements of one page (p starts at its header; an
// inline bucket's page is a slice of its parent's value).
func (w *treeWalk) elements(p []byte, where string, depth int) error {
	if len(p) < boltPageHeader {
		return fmt.Errorf("has %s shorter than a page header", where)
	}
	ne := binary.NativeEndian
	flags, count := ne.Uint16(p[8:]), uint64(ne.Uint16(p[10:]))
	size := uint64(len(p))
	if boltPageHeader+count*boltElement > size {
		return fmt.Errorf("has %s counting %d elements, more than it holds", where, count)
	}
	elem := func(i uint64) []byte { return p[boltPageHeader+i*boltElement:][:boltElement] }
	// within says whether n bytes at pos from element i lie inside p.
	within := func(i, pos, n uint64) bool {
		return boltPageHeader+i*boltElement+pos+n <= size
	}
	switch {
	case flags&boltBranchPage != 0:
		if count == 0 {
			return fmt.Errorf("has %s, a branch without children", where)
		}
		for i := uint64(0); i < count; i++ {
			e := elem(i)
			if !within(i, uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))) {
				return fmt.Errorf("has %s whose key %d lies outside it", where, i)
			}
			if err := w.node(ne.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
		}
	case flags&boltLeafPage != 0:
		for i := uint64(0); i < count; i++ {
			e := elem(i)
			pos, ksize, vsize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
			if !within(i, pos, ksize+vsize) {
				return fmt.Errorf("has %s whose element %d lies outside it", where, i)
			}
			if ne.Uint32(e[0:])&boltBucketLeaf == 0 {
				continue
			}
			if vsize < boltBucketHeader {
				return fmt.Errorf("has %s whose bucket %d has no header", where, i)
			}
			v := p[boltPageHeader+i*boltElement+pos+ksize:][:vsize]
			root := ne.Uint64(v)
			if root != 0 {
				if err := w.node(root, depth+1); err != nil {
					return err
				}
				continue
			}
			if depth+1 > boltMaxDepth {
				return fmt.Errorf("nests buckets more than %d deep in %s", boltMaxDepth, where)
			}
			if err := w.elements(v[boltBucketHeader:], fmt.Sprintf("the inline bucket %d of %s", i, where), depth+1); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("has %s that is neither a branch nor a leaf (flags %#x)", where, flags)
	}
	return nil
}
