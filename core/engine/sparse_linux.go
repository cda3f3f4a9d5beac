package engine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// copySparse copies the first size bytes of src to dst, data regions only
// (SEEK_DATA/SEEK_HOLE): a hole stays a hole, so a file of 128 MiB that
// holds 12 KiB of data takes about 12 KiB in the copy too. dst ends at
// size. It returns the bytes of data copied; budget > 0 bounds them
// (errCopyLimit past it). A file system without SEEK_DATA has its file
// copied whole.
func copySparse(dst, src int, size, budget int64) (int64, error) {
	var off, copied int64
	for off < size {
		data, end, err := nextData(src, off, size)
		if err != nil {
			return copied, err
		}
		if data >= size {
			break
		}
		if budget > 0 && copied+end-data > budget {
			return copied, fmt.Errorf("more than %d bytes of files: %w", budget, errCopyLimit)
		}
		n, err := copyRange(dst, src, data, end-data)
		copied += n
		if err != nil {
			return copied, err
		}
		off = data + n
		if n == 0 {
			break // the file shrank meanwhile
		}
	}
	return copied, unix.Ftruncate(dst, size)
}

// nextData finds the first data region at or after off: [data, end), end
// at most size; data is size when only a hole is left.
func nextData(fd int, off, size int64) (data, end int64, err error) {
	data, err = unix.Seek(fd, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return size, size, nil
	case errors.Is(err, unix.EINVAL): // no SEEK_DATA here: all of it is data
		return off, size, nil
	case err != nil:
		return 0, 0, err
	}
	end = size
	if hole, err := unix.Seek(fd, data, unix.SEEK_HOLE); err == nil && hole < size {
		end = hole
	}
	return min(data, size), end, nil
}

// copyRange copies n bytes at off of src to the same offset of dst: in the
// kernel where it can (copy_file_range), else through a buffer.
func copyRange(dst, src int, off, n int64) (int64, error) {
	var done int64
	for done < n {
		in, out := off+done, off+done
		k, err := unix.CopyFileRange(src, &in, dst, &out, int(min(n-done, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
				m, err := copyRangeBuffered(dst, src, off+done, n-done)
				return done + m, err
			}
			return done, err
		}
		if k == 0 {
			break
		}
		done += int64(k)
	}
	return done, nil
}

func copyRangeBuffered(dst, src int, off, n int64) (int64, error) {
	buf := make([]byte, min(n, 1<<20))
	var done int64
	for done < n {
		k, err := unix.Pread(src, buf[:min(int64(len(buf)), n-done)], off+done)
		if err != nil {
			return done, err
		}
		if k == 0 {
			break
		}
		w, err := unix.Pwrite(dst, buf[:k], off+done)
		done += int64(w)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
