package testsupport

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is the path of a Chromium (or Chrome) browser; when there is
// none, the test fails under CI=true (scripts/test.sh installs Debian's
// chromium) and is skipped otherwise.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: scripts/test.sh installs Debian's chromium package")
	}
	t.Skip("browser test: chromium not installed (apt-get install chromium, or run scripts/test.sh)")
	return ""
}

// Browser is the context of a headless browser (the Chromium at path, with
// extra options) for timeout at most, closed when the test ends.
func Browser(t testing.TB, path string, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	opts := append(append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true)), extra...)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	return ctx
}
