package process

import (
	"fmt"
	"os"
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
	st, err := ParseStreams(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
