package process

import (
	"errors"
	"fmt"
	"os"

	"github.com/eventlogging/eventlogging/internal/yamlerr"
)

// LoadStreamsFile reads a stream configuration file (process.streams_file);
// an empty configuration when path is "".
func LoadStreamsFile(path string) (*Streams, error) {
	if path == "" {
		return NewStreams(nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("process.streams_file: %w", err)
	}
	st, err := parseStreams(path, data)
	var ye *yamlerr.Error
	if err != nil && !errors.As(err, &ye) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}
