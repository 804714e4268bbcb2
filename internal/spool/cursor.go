package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The cursor file holds the sequence number of the oldest un-acked record
// in two slots, written alternately in place so that Ack never needs a new
// disk block and a torn write leaves the other slot intact. Slot i starts
// at offset i*cursorSlotStride, so that each is in its own page and disk
// block, and is cursorSlotLen bytes, integers big-endian:
//
//	[0:4]   magic "SPCR"
//	[4:8]   uint32 format version, 1
//	[8:16]  uint64 generation, even in slot 0 and odd in slot 1
//	[16:24] uint64 sequence number of the oldest un-acked record
//	[24:28] zero
//	[28:32] CRC-32C (Castagnoli) of bytes 0 to 27
//
// The valid slot with the higher generation is the cursor. The rest of the
// file is zeros.
const (
	cursorMagic      = "SPCR"
	cursorVersion    = 1
	cursorSlotLen    = 32
	cursorSlotStride = 4096
	cursorFileSize   = 2 * cursorSlotStride

	// maxTextCursorLen is the longest cursor file of the old text format:
	// a uint64 in decimal and a newline.
	maxTextCursorLen = 21
)

// cursorKind is the format of the cursor file Open found.
type cursorKind int

const (
	cursorNone  cursorKind = iota // no cursor file
	cursorText                    // the old format: decimal and a newline
	cursorSlots                   // the slotted format above
)

// cursorState is what readCursor found.
type cursorState struct {
	kind cursorKind
	seq  uint64 // the sequence number, if kind is not cursorNone
	gen  uint64 // the newest valid slot's generation, if kind is cursorSlots
}

// readCursor reads the cursor file at path, in either format. A slotted
// file with one invalid slot is read from the other, with a warning (a
// crash during Ack's write leaves that); one with neither slot valid, or a
// file in neither format, is a *CorruptError.
func readCursor(fsys vfs.FS, path string, log *slog.Logger) (cursorState, error) {
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return cursorState{kind: cursorNone}, nil
	}
	if err != nil {
		return cursorState{}, fmt.Errorf("spool: read cursor: %w", err)
	}
	if len(b) != cursorFileSize {
		digits, ok := bytes.CutSuffix(b, []byte("\n"))
		seq, perr := strconv.ParseUint(string(digits), 10, 64)
		if !ok || perr != nil || len(b) > maxTextCursorLen {
			return cursorState{}, &CorruptError{Path: path, cursor: true, Reason: fmt.Sprintf(
				"%d bytes, neither the %d of the slotted format nor a decimal sequence number and a newline (%q)",
				len(b), cursorFileSize, b[:min(len(b), 32)])}
		}
		return cursorState{kind: cursorText, seq: seq}, nil
	}

	var found [2]struct {
		gen, seq uint64
		bad      string
	}
	for i := range found {
		off := i * cursorSlotStride
		found[i].gen, found[i].seq, found[i].bad = decodeCursorSlot(b[off:off+cursorSlotLen], i)
	}
	newest := 0
	switch {
	case found[0].bad != "" && found[1].bad != "":
		return cursorState{}, &CorruptError{Path: path, cursor: true, Reason: fmt.Sprintf(
			"neither slot is valid: slot 0 at offset 0: %s; slot 1 at offset %d: %s",
			found[0].bad, cursorSlotStride, found[1].bad)}
	case found[0].bad != "":
		newest = 1
	case found[1].bad != "":
		newest = 0
	case found[1].gen > found[0].gen:
		newest = 1
	}
	if other := 1 - newest; found[other].bad != "" {
		log.Warn("spool cursor slot is invalid; using the other one",
			"file", path, "slot", other, "reason", found[other].bad,
			"generation", found[newest].gen, "seq", found[newest].seq)
	}
	return cursorState{kind: cursorSlots, seq: found[newest].seq, gen: found[newest].gen}, nil
}

// encodeCursorSlot writes a slot holding gen and seq into b.
func encodeCursorSlot(b []byte, gen, seq uint64) {
	b = b[:cursorSlotLen]
	copy(b[0:4], cursorMagic)
	binary.BigEndian.PutUint32(b[4:8], cursorVersion)
	binary.BigEndian.PutUint64(b[8:16], gen)
	binary.BigEndian.PutUint64(b[16:24], seq)
	clear(b[24:28])
	binary.BigEndian.PutUint32(b[28:32], crc32.Checksum(b[:28], castagnoli))
}

// decodeCursorSlot validates b, the slot numbered slot, and returns its
// generation and sequence number, or why it is not valid.
func decodeCursorSlot(b []byte, slot int) (gen, seq uint64, bad string) {
	sum, want := crc32.Checksum(b[:28], castagnoli), binary.BigEndian.Uint32(b[28:32])
	gen, seq = binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
	switch {
	case string(b[0:4]) != cursorMagic:
		return 0, 0, fmt.Sprintf("magic %q, want %q", b[0:4], cursorMagic)
	case sum != want:
		return 0, 0, fmt.Sprintf("checksum %08x, slot says %08x", sum, want)
	case binary.BigEndian.Uint32(b[4:8]) != cursorVersion:
		return 0, 0, fmt.Sprintf("format version %d, this build reads %d", binary.BigEndian.Uint32(b[4:8]), cursorVersion)
	case binary.BigEndian.Uint32(b[24:28]) != 0:
		return 0, 0, "reserved bytes are not zero"
	case gen%2 != uint64(slot):
		return 0, 0, fmt.Sprintf("generation %d does not belong in slot %d", gen, slot)
	}
	return gen, seq, ""
}

// cursorFile is the open cursor file, which Ack overwrites in place.
type cursorFile struct {
	f    vfs.File
	path string
	gen  uint64 // generation of the newest slot written
	buf  [cursorSlotLen]byte
}

// createCursor replaces the cursor file in dir with a slotted one holding
// seq in both slots (generations 0 and 1), written in full so that its
// blocks are allocated: temporary file, fsync, rename, fsync of the
// directory. It returns the file opened for writing.
func createCursor(fsys vfs.FS, dir string, dirF vfs.File, seq uint64) (*cursorFile, error) {
	b := make([]byte, cursorFileSize)
	encodeCursorSlot(b, 0, seq)
	encodeCursorSlot(b[cursorSlotStride:], 1, seq)
	tmp, path := filepath.Join(dir, cursorTmpName), filepath.Join(dir, cursorName)
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return nil, fmt.Errorf("spool: create cursor: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return nil, fmt.Errorf("spool: create cursor: %w", err)
	}
	if err := dirF.Sync(); err != nil {
		return nil, fmt.Errorf("spool: create cursor: sync %s: %w", dir, err)
	}
	return openCursor(fsys, path, 1)
}

// openCursor opens the slotted cursor file at path, whose newest slot has
// generation gen, for writing.
func openCursor(fsys vfs.FS, path string, gen uint64) (*cursorFile, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("spool: open cursor: %w", err)
	}
	return &cursorFile{f: f, path: path, gen: gen}, nil
}

// write durably records seq as the cursor: it overwrites the older slot
// with the next generation and fsyncs. The file's blocks were allocated
// when it was created, so this needs no free space. If write fails the
// older slot may be torn but the newer one is untouched; the next write
// goes to the same slot again.
func (c *cursorFile) write(seq uint64) error {
	gen := c.gen + 1
	encodeCursorSlot(c.buf[:], gen, seq)
	if _, err := c.f.WriteAt(c.buf[:], int64(gen%2)*cursorSlotStride); err != nil {
		return fmt.Errorf("spool: write cursor: %w", err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("spool: write cursor: sync %s: %w", c.path, err)
	}
	c.gen = gen
	return nil
}
