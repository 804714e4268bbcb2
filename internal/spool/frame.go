package spool

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strings"
)

// headerLen is the size of a frame's length and checksum fields.
const headerLen = 8

// topicLenSize is the size of the topic length field, the shortest payload.
const topicLenSize = 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameError is a frame that is torn or fails validation; Open decides
// whether that is a torn tail or corruption by where it is.
type frameError struct{ reason string }

func (e *frameError) Error() string { return e.reason }

// batchSize returns the bytes recs take as frames, or an error naming the
// first record that cannot be framed.
func batchSize(recs []Record) (int64, error) {
	var n int64
	for i, r := range recs {
		if len(r.Headers) > 0 {
			return 0, fmt.Errorf("spool: record %d: headers are not spooled (topic %s)", i, r.Topic)
		}
		if strings.IndexByte(r.Topic, 0) >= 0 {
			return 0, fmt.Errorf("spool: record %d: topic %q holds a zero byte", i, r.Topic)
		}
		if fl := fieldLen(r); fl > math.MaxUint16 {
			return 0, fmt.Errorf("spool: record %d: topic and key are %d bytes, at most %d fit", i, fl, math.MaxUint16)
		}
		payload := int64(topicLenSize) + int64(fieldLen(r)) + int64(len(r.Value))
		if payload > math.MaxUint32 {
			return 0, fmt.Errorf("spool: record %d: %d bytes, at most %d fit", i, payload, int64(math.MaxUint32))
		}
		n += headerLen + payload
	}
	return n, nil
}

// appendFrames appends the frames of recs to dst. The records must have
// passed batchSize, and size is what it returned.
func appendFrames(dst []byte, recs []Record, size int64) []byte {
	dst = slices.Grow(dst, int(size))
	for _, r := range recs {
		start := len(dst)
		payload := topicLenSize + fieldLen(r) + len(r.Value)
		dst = binary.BigEndian.AppendUint32(dst, uint32(payload))
		dst = append(dst, 0, 0, 0, 0) // checksum, filled in below
		dst = binary.BigEndian.AppendUint16(dst, uint16(fieldLen(r)))
		dst = append(dst, r.Topic...)
		if r.Key != nil {
			dst = append(dst, 0)
			dst = append(dst, r.Key...)
		}
		dst = append(dst, r.Value...)
		binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+headerLen:], castagnoli))
	}
	return dst
}

// fieldLen is the length of r's topic field: the topic, then, when r has
// a key, a zero byte (which no Kafka topic name holds) and the key.
func fieldLen(r Record) int {
	if r.Key == nil {
		return len(r.Topic)
	}
	return len(r.Topic) + 1 + len(r.Key)
}

// readHeader reads a frame header from r, where remaining bytes are left
// in the file. It returns the payload length and checksum. A clean end of
// the file is io.EOF; a header that cannot be a valid frame's is a
// *frameError.
func readHeader(r *bufio.Reader, remaining int64) (n int64, sum uint32, err error) {
	if remaining == 0 {
		return 0, 0, io.EOF
	}
	if remaining < headerLen {
		return 0, 0, &frameError{fmt.Sprintf("incomplete frame header (%d bytes)", remaining)}
	}
	hdr, err := r.Peek(headerLen)
	if err != nil {
		return 0, 0, unexpectedEOF(err)
	}
	n = int64(binary.BigEndian.Uint32(hdr[0:4]))
	sum = binary.BigEndian.Uint32(hdr[4:8])
	_, _ = r.Discard(headerLen)
	if n < topicLenSize {
		return 0, 0, &frameError{fmt.Sprintf("frame length %d is shorter than a topic length", n)}
	}
	if n > remaining-headerLen {
		return 0, 0, &frameError{fmt.Sprintf("frame length %d runs past the end of the file (%d bytes left)", n, remaining-headerLen)}
	}
	return n, sum, nil
}

// checkPayload validates a frame's payload against its checksum and its
// topic length field.
func checkPayload(p []byte, sum uint32) error {
	if got := crc32.Checksum(p, castagnoli); got != sum {
		return &frameError{fmt.Sprintf("checksum %08x, frame says %08x", got, sum)}
	}
	return checkTopicLen(p[:topicLenSize], len(p))
}

func checkTopicLen(field []byte, payload int) error {
	if tl := int(binary.BigEndian.Uint16(field)); tl > payload-topicLenSize {
		return &frameError{fmt.Sprintf("topic length %d exceeds the frame's %d bytes", tl, payload-topicLenSize)}
	}
	return nil
}

// readFrame reads and validates one frame and returns it as a Record whose
// Value is newly allocated, and the frame's size. A clean end is io.EOF.
// lastTopic, when equal, is reused so that repeated topics are not
// allocated again.
func readFrame(r *bufio.Reader, remaining int64, lastTopic string) (Record, int64, error) {
	n, sum, err := readHeader(r, remaining)
	if err != nil {
		return Record{}, 0, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return Record{}, 0, unexpectedEOF(err)
	}
	if err := checkPayload(p, sum); err != nil {
		return Record{}, 0, err
	}
	tl := int(binary.BigEndian.Uint16(p))
	field := p[topicLenSize : topicLenSize+tl]
	var key []byte
	if i := bytes.IndexByte(field, 0); i >= 0 {
		field, key = field[:i], field[i+1:len(field):len(field)]
	}
	topic := lastTopic
	if string(field) != lastTopic {
		topic = string(field)
	}
	return Record{Topic: topic, Key: key, Value: p[topicLenSize+tl:]}, headerLen + n, nil
}

// scanFrame validates one frame without keeping it, streaming the payload
// through the checksum, and returns the frame's size. A clean end is io.EOF.
func scanFrame(r *bufio.Reader, remaining int64) (int64, error) {
	n, sum, err := readHeader(r, remaining)
	if err != nil {
		return 0, err
	}
	var h uint32
	var first [topicLenSize]byte
	for left := n; left > 0; {
		chunk, err := r.Peek(int(min(left, int64(r.Size()))))
		if len(chunk) == 0 && err != nil {
			return 0, unexpectedEOF(err)
		}
		if left == n {
			copy(first[:], chunk) // a chunk is never shorter than the topic length field
		}
		h = crc32.Update(h, castagnoli, chunk)
		_, _ = r.Discard(len(chunk))
		left -= int64(len(chunk))
	}
	if h != sum {
		return 0, &frameError{fmt.Sprintf("checksum %08x, frame says %08x", h, sum)}
	}
	if err := checkTopicLen(first[:], int(n)); err != nil {
		return 0, err
	}
	return headerLen + n, nil
}

// skipFrame steps over one frame that was validated before, reading only
// its header, and returns the frame's size.
func skipFrame(r *bufio.Reader, remaining int64) (int64, error) {
	n, _, err := readHeader(r, remaining)
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	if _, err := r.Discard(int(n)); err != nil {
		return 0, unexpectedEOF(err)
	}
	return headerLen + n, nil
}

// unexpectedEOF turns an end of file inside a frame, which the length
// checks against the file size rule out unless the file shrank, into
// io.ErrUnexpectedEOF so that it is not taken for a clean end.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
