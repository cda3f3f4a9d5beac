package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"syscall"
)

// The pure decisions about a state directory's store: is its file a sound
// bbolt database, may the engine start on it, which socket may be swept.
// Reading the files is in storeinspect.go; nothing here touches the disk.

// bbolt's on-disk meta page (go.etcd.io/bbolt internal/common): a 16-byte
// page header, then magic, version, page size, flags, root bucket (root
// page, sequence), freelist page, high water mark, txid and an FNV-64a
// checksum of everything before it. Integers are in the machine's order.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16
	boltMetaLen     = 64
	boltNoFreelist  = ^uint64(0)
	boltMinPageSize = 1024
)

type boltMeta struct {
	magic, version, pageSize uint32
	root, freelist, hwm      uint64
	txid, checksum           uint64
	sum                      uint64 // the checksum computed over the page
}

func parseMeta(page []byte) (boltMeta, bool) {
	if len(page) < boltPageHeader+boltMetaLen {
		return boltMeta{}, false
	}
	b := page[boltPageHeader : boltPageHeader+boltMetaLen]
	ne := binary.NativeEndian
	h := fnv.New64a()
	h.Write(b[:56])
	return boltMeta{
		magic: ne.Uint32(b[0:]), version: ne.Uint32(b[4:]), pageSize: ne.Uint32(b[8:]),
		root: ne.Uint64(b[16:]), freelist: ne.Uint64(b[32:]), hwm: ne.Uint64(b[40:]),
		txid: ne.Uint64(b[48:]), checksum: ne.Uint64(b[56:]), sum: h.Sum64(),
	}, true
}

func (m boltMeta) valid() bool {
	return m.magic == boltMagic && m.version == boltVersion && m.checksum == m.sum
}

// checkHeader decides from a file's size, its meta pages and the pages they
// lead to (checkTree) whether bbolt can open and walk it without reading
// past its end or going round in circles. bbolt itself initializes an
// empty file as a new database and maps a truncated one, then faults
// (SIGBUS) when it reads a page the file no longer has: both must be caught
// before bbolt sees the file. It picks the meta page the way bbolt does (the
// valid one with the higher txid) and returns the page size.
func checkHeader(r io.ReaderAt, size int64) (int, error) {
	if size == 0 {
		return 0, errors.New("is empty (0 bytes)")
	}
	read := func(off int64) (boltMeta, bool) {
		buf := make([]byte, boltPageHeader+boltMetaLen)
		if n, _ := r.ReadAt(buf, off); n < len(buf) {
			return boltMeta{}, false
		}
		return parseMeta(buf)
	}
	// The page size is in the first valid meta page; bbolt looks for the
	// second one at every power of two from 1 KiB to 16 MiB.
	pageSize, sawMagic := 0, false
	for off := int64(0); off == 0 || (off <= 16<<20 && off < size); off = nextMetaOffset(off) {
		m, ok := read(off)
		sawMagic = sawMagic || (ok && m.magic == boltMagic)
		if ok && m.valid() && m.pageSize >= boltMinPageSize && m.pageSize&(m.pageSize-1) == 0 {
			pageSize = int(m.pageSize)
			break
		}
	}
	if pageSize == 0 {
		if sawMagic {
			return 0, fmt.Errorf("has no valid bbolt meta page (both fail their checksum; %d bytes)", size)
		}
		return 0, fmt.Errorf("is not a bbolt database (no bbolt header in its %d bytes)", size)
	}
	if size < 2*int64(pageSize) {
		return 0, fmt.Errorf("is truncated: %d bytes, less than its two meta pages of %d bytes", size, pageSize)
	}
	m0, _ := read(0)
	m1, _ := read(int64(pageSize))
	a, b := m0, m1
	if m1.txid > m0.txid {
		a, b = m1, m0
	}
	m := a
	if !a.valid() {
		m = b
	}
	if !m.valid() {
		return 0, errors.New("has no valid bbolt meta page")
	}
	if need := int64(m.hwm) * int64(pageSize); m.hwm > 1<<40 || need > size {
		return 0, fmt.Errorf("is truncated: %d bytes, but its header counts %d pages of %d bytes (%d bytes)", size, m.hwm, pageSize, need)
	}
	if m.root >= m.hwm || (m.freelist >= m.hwm && m.freelist != boltNoFreelist) {
		return 0, fmt.Errorf("has a meta page that points past its last page (root %d, freelist %d, %d pages)", m.root, m.freelist, m.hwm)
	}
	if err := checkTree(r, pageSize, m); err != nil {
		return 0, err
	}
	return pageSize, nil
}

func nextMetaOffset(off int64) int64 {
	if off == 0 {
		return boltMinPageSize
	}
	return off * 2
}

// storeFacts is what inspecting a store file found (storeinspect.go).
type storeFacts struct {
	exists bool
	// damage says why the file is not a sound bbolt database of ours
	// (empty, not bbolt, truncated, open or consistency check failed,
	// bbolt panicked, a record does not decode); "" when it is sound.
	damage string
	// hasSandboxes: the sandboxes bucket exists.
	hasSandboxes bool
	records      []record
	requests     int
	snaps        []string // ns/name of snapshot records
}

func (f storeFacts) keys() map[string]bool {
	m := make(map[string]bool, len(f.records))
	for i := range f.records {
		m[f.records[i].key()] = true
	}
	return m
}

// judgeStore decides whether the engine may start on a state directory:
// fresh (no store yet: make one), usable (problem ""), or not (problem says
// why, to be completed as "the state store <path> <problem>"). dirs are the
// sandbox directories (ns/name) under <state-dir>/sandboxes; backup tells
// whether a backup file exists. The rule: never start empty over evidence
// of sandboxes, whether that evidence is directories, request ids or a
// backup.
func judgeStore(f storeFacts, dirs []string, backup bool) (fresh bool, problem string) {
	switch {
	case !f.exists && len(dirs) > 0:
		return false, fmt.Sprintf("is missing, while %s exist", countDirs(len(dirs)))
	case !f.exists && backup:
		return false, "is missing, while a backup of it exists"
	case !f.exists:
		return true, ""
	case f.damage != "":
		return false, f.damage
	case !f.hasSandboxes && (len(dirs) > 0 || f.requests > 0):
		return false, fmt.Sprintf("has no sandboxes bucket, while %s", evidence(len(dirs), f.requests))
	case len(f.records) == 0 && len(dirs) > 0:
		return false, fmt.Sprintf("holds no sandbox records, while %s exist", countDirs(len(dirs)))
	}
	return false, ""
}

func evidence(dirs, requests int) string {
	if dirs > 0 {
		return countDirs(dirs) + " exist"
	}
	return fmt.Sprintf("it holds %d request ids of sandboxes", requests)
}

func countDirs(n int) string {
	if n == 1 {
		return "1 sandbox directory"
	}
	return fmt.Sprintf("%d sandbox directories", n)
}

// orphanDirs are the sandbox directories that no record owns: sandboxes
// made after the backup a store was restored from. They are kept and
// reported, never deleted.
func orphanDirs(f storeFacts, dirs []string) []string {
	known := f.keys()
	var out []string
	for _, d := range dirs {
		if !known[d] {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// staleSocket decides whether the start-up sweep may remove an entry of the
// socket directory: only a socket that no record owns and that nothing
// listens on (connecting is refused). A socket someone listens on is a live
// agent, even one whose record the store lost (restored from an older
// backup); any other answer (a timeout, a full backlog) keeps it too, and
// what is not a socket was not made by the engine.
func staleSocket(known, isSocket bool, dialErr error) bool {
	return !known && isSocket && errors.Is(dialErr, syscall.ECONNREFUSED)
}
