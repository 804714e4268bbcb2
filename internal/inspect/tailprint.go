package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// PrintConfig is what `eventlogging tail` prints.
type PrintConfig struct {
	Kafka         kafka.Config
	Topics        []string
	FromBeginning bool
	// Count stops after that many printed records; 0: no limit.
	Count int
	// StopAtEnd stops at the end of what the topics hold (see
	// kafka.TailConfig).
	StopAtEnd bool
	// WaitForTopics waits for topics that do not exist yet, calling OnWait
	// once with them (see kafka.TailConfig).
	WaitForTopics bool
	OnWait        func(missing []string)
	// Pretty indents each value over several lines.
	Pretty bool
	// Schema and Grep select the records printed (zero: all): see
	// schema.EventMatches; the raw value matches Grep.
	Schema string
	Grep   *regexp.Regexp
	// Avro decodes records in the Confluent wire format to JSON; nil
	// prints them raw.
	Avro   *avrowire.Codec
	Logger *slog.Logger
}

// PrintRecords writes the value of each record of the topics that passes
// the filters to w as one JSON line, until ctx ends, Count records were
// printed or, with StopAtEnd, the topics end. It returns how many it
// printed.
func PrintRecords(ctx context.Context, cfg PrintConfig, w io.Writer) (int, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	from := "end"
	if cfg.FromBeginning {
		from = "beginning"
	}
	tc := kafka.TailConfig{
		Kafka:         cfg.Kafka,
		Topics:        cfg.Topics,
		FromBeginning: cfg.FromBeginning,
		StopAtEnd:     cfg.StopAtEnd,
		WaitForTopics: cfg.WaitForTopics,
		OnWait:        cfg.OnWait,
		OnStart:       func() { log.Info("tailing", "topics", cfg.Topics, "from", from, "brokers", cfg.Kafka.Brokers) },
	}
	var line bytes.Buffer
	printed := 0
	err := kafka.Tail(ctx, tc, func(r kafka.Record) error {
		if cfg.Avro != nil && avrowire.IsWire(r.Value) {
			js, err := cfg.Avro.DecodeJSON(ctx, r.Value)
			if err != nil {
				log.Warn("cannot decode Avro record; printing it raw", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
			} else {
				r.Value = js
			}
		}
		if cfg.Grep != nil && !cfg.Grep.Match(r.Value) || cfg.Schema != "" && !schema.EventMatches(r.Value, cfg.Schema) {
			return nil
		}
		line.Reset()
		writeValue(&line, r.Value, cfg.Pretty)
		if _, err := w.Write(line.Bytes()); err != nil {
			return fmt.Errorf("tail: write: %w", err)
		}
		printed++
		if cfg.Count > 0 && printed >= cfg.Count {
			return kafka.ErrStopTail
		}
		return nil
	})
	return printed, err
}

// writeValue writes a record value as one JSON line (indented with pretty):
// JSON as it is, anything else as a JSON string, a null value as null.
func writeValue(dst *bytes.Buffer, value []byte, pretty bool) {
	switch {
	case value == nil:
		dst.WriteString("null\n")
	case json.Valid(value):
		if pretty {
			_ = json.Indent(dst, value, "", "  ") // valid JSON: cannot fail
		} else {
			_ = json.Compact(dst, value) // valid JSON: cannot fail
		}
		dst.WriteByte('\n')
	default:
		enc := json.NewEncoder(dst) // ends the line
		enc.SetEscapeHTML(false)
		_ = enc.Encode(string(value)) // a string always encodes
	}
}
