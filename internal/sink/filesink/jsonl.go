package filesink

import (
	"bufio"
	"io"

	"github.com/klauspost/compress/gzip"
)

// jsonlBufferSize is the write buffer between the compressor and the file.
const jsonlBufferSize = 64 << 10

// jsonlWriter writes JSON lines through gzip. Memory: the compressor's
// state (about 1 MiB at the default level, see BenchmarkWrite) plus a
// 64 KiB write buffer.
type jsonlWriter struct {
	bw *bufio.Writer
	cw countingWriter
	gz *gzip.Writer
}

func newJSONLWriter(f io.Writer) *jsonlWriter {
	w := &jsonlWriter{bw: bufio.NewWriterSize(f, jsonlBufferSize)}
	w.cw.w = w.bw
	w.gz, _ = gzip.NewWriterLevel(&w.cw, gzip.DefaultCompression) // the level is valid
	return w
}

func (w *jsonlWriter) append(pl *placed) error {
	if _, err := w.gz.Write(pl.line); err != nil {
		return err
	}
	_, err := w.gz.Write(newline)
	return err
}

var newline = []byte{'\n'}

func (w *jsonlWriter) flush() error { return nil }

func (w *jsonlWriter) size() int64 { return w.cw.n }

func (w *jsonlWriter) finish() error {
	if err := w.gz.Close(); err != nil {
		return err
	}
	return w.bw.Flush()
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
