//go:build race

package e2e

// raceEnabled: the race detector slows everything several times, so load
// tests skip under it; scripts/test.sh runs them in a pass of their own.
const raceEnabled = true
