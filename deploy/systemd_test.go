package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	unitDir    = "systemd"
	installBin = "/usr/local/bin/eventlogging"
	configPath = "/etc/eventlogging/eventlogging.yaml"
	secretsEnv = "-/etc/eventlogging/secrets.env"
	// The instance systemd-analyze verifies the processor template as.
	processInstance = "9101"
)

// unit is a parsed unit file: section → key → values in order.
type unit struct {
	name     string
	sections map[string]map[string][]string
}

func (u unit) get(section, key string) []string { return u.sections[section][key] }

// one is the last value of a key ("" when unset), as systemd reads most keys.
func (u unit) one(section, key string) string {
	v := u.get(section, key)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func readUnit(t *testing.T, file string) unit {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{name: filepath.Base(file), sections: map[string]map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			u.sections[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continuation lines are not read by this test", file, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not Key=Value in a section: %q", file, n, line)
			}
			u.sections[section][k] = append(u.sections[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func units(t *testing.T) []unit {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(unitDir, "eventlogging*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []unit
	for _, f := range files {
		out = append(out, readUnit(t, f))
	}
	return out
}

// roleOf is the eventlogging command a unit runs ("" for a timer).
func roleOf(u unit) string {
	args := strings.Fields(u.one("Service", "ExecStart"))
	if len(args) < 2 {
		return ""
	}
	return args[1]
}

// execArgs is a unit's ExecStart after the binary, with the specifiers it
// uses replaced by sample values.
func execArgs(u unit) []string {
	r := strings.NewReplacer("%i", processInstance, "%H", "host1")
	return strings.Fields(r.Replace(u.one("Service", "ExecStart")))[1:]
}

// flagValue is the value of --name VALUE or --name=VALUE in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// reloadsOnSIGHUP are the roles that reload on SIGHUP (internal/cli's
// Run); SIGHUP stops the others, so their units must not send it.
var reloadsOnSIGHUP = []string{"intake", "process", "sink"}

// TestSystemdUnitFiles checks what each unit must hold: a unit per role,
// the hardening settings, the secrets file, a Go memory limit under the
// unit's memory bound, restarts, reloads only for the roles that reload, the
// intake's spool in its state directory; and that the binary accepts every
// command line the units start it with.
func TestSystemdUnitFiles(t *testing.T) {
	byName := map[string]unit{}
	for _, u := range units(t) {
		byName[u.name] = u
	}
	for _, want := range []string{
		"eventlogging-intake.service", "eventlogging-process@.service", "eventlogging-sink.service",
		"eventlogging-registry.service", "eventlogging-dashboard.service",
		"eventlogging-purge.service", "eventlogging-purge.timer",
	} {
		if _, ok := byName[want]; !ok {
			t.Errorf("%s/%s is missing", unitDir, want)
		}
	}
	if timer, ok := byName["eventlogging-purge.timer"]; ok {
		if got := timer.one("Timer", "Unit"); got != "eventlogging-purge.service" {
			t.Errorf("eventlogging-purge.timer: Unit=%q, want eventlogging-purge.service", got)
		}
		if timer.one("Timer", "OnCalendar") == "" || timer.one("Install", "WantedBy") != "timers.target" {
			t.Errorf("eventlogging-purge.timer: want OnCalendar= and WantedBy=timers.target")
		}
	}
	for name, u := range byName {
		if !strings.HasSuffix(name, ".service") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := func(key, value string) {
				t.Helper()
				if got := u.one("Service", key); got != value {
					t.Errorf("%s=%q, want %q", key, got, value)
				}
			}
			role := roleOf(u)
			args := execArgs(u)
			if got := u.one("Service", "ExecStart"); !strings.HasPrefix(got, installBin+" ") {
				t.Errorf("ExecStart=%q, want %s ROLE …", got, installBin)
			}
			if got := flagValue(args, "config"); got != configPath {
				t.Errorf("ExecStart: --config %q, want %s", got, configPath)
			}
			if u.one("Service", "DynamicUser") != "yes" && u.one("Service", "User") == "" {
				t.Error("want DynamicUser=yes or a User=")
			}
			for key, value := range map[string]string{
				"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
				"NoNewPrivileges": "yes", "PrivateDevices": "yes",
			} {
				want(key, value)
			}
			if !slices.Contains(u.get("Service", "EnvironmentFile"), secretsEnv) {
				t.Errorf("EnvironmentFile=%v, want %s", u.get("Service", "EnvironmentFile"), secretsEnv)
			}
			if u.one("Service", "LimitNOFILE") == "" {
				t.Error("LimitNOFILE= is not set")
			}
			var goLimit string
			for _, e := range u.get("Service", "Environment") {
				if v, ok := strings.CutPrefix(e, "GOMEMLIMIT="); ok {
					goLimit = v
				}
			}
			limit, err := parseBytes(goLimit, goUnits)
			if err != nil {
				t.Errorf("Environment=GOMEMLIMIT=…: %v", err)
			}
			if max, err := parseBytes(u.one("Service", "MemoryMax"), systemdUnits); err != nil {
				t.Errorf("MemoryMax: %v", err)
			} else if limit >= max {
				t.Errorf("GOMEMLIMIT=%s is not under MemoryMax=%s", goLimit, u.one("Service", "MemoryMax"))
			}

			if u.one("Service", "Type") == "oneshot" {
				if u.one("Service", "Restart") != "" {
					t.Error("a oneshot unit (started by its timer) should not restart itself")
				}
			} else {
				want("Restart", "on-failure")
				if u.one("Service", "RestartSec") == "" {
					t.Error("RestartSec= is not set")
				}
				if u.one("Install", "WantedBy") != "multi-user.target" {
					t.Error("want WantedBy=multi-user.target")
				}
			}
			reload := u.one("Service", "ExecReload")
			if slices.Contains(reloadsOnSIGHUP, role) {
				if reload != "/bin/kill -HUP $MAINPID" {
					t.Errorf("ExecReload=%q, want /bin/kill -HUP $MAINPID (eventlogging %s reloads on SIGHUP)", reload, role)
				}
			} else if reload != "" {
				t.Errorf("ExecReload=%q: eventlogging %s does not reload on SIGHUP, which would stop it", reload, role)
			}

			// What the role writes must be in its state directory: with
			// ProtectSystem=strict the rest of the file system is read-only.
			states := u.get("Service", "StateDirectory")
			switch role {
			case "intake":
				spool := flagValue(args, "spool-dir")
				if len(states) != 1 || !strings.HasPrefix(spool, path.Join("/var/lib", states[0])+"/") {
					t.Errorf("--spool-dir %q is not in the StateDirectory %v (/var/lib/…)", spool, states)
				}
			case "sink", "purge":
				if len(states) != 1 || states[0] != "eventlogging-sink" {
					t.Errorf("StateDirectory=%v, want eventlogging-sink (the sink's files and SQLite databases)", states)
				}
				// The purge rewrites the sink's files: same user, same directory.
				if u.one("Service", "User") != "eventlogging-sink" {
					t.Errorf("User=%q, want eventlogging-sink", u.one("Service", "User"))
				}
			}
			if len(states) > 0 && u.one("Service", "WorkingDirectory") != path.Join("/var/lib", states[0]) {
				t.Errorf("WorkingDirectory=%q, want the state directory (relative paths in the configuration land there)", u.one("Service", "WorkingDirectory"))
			}
			checkArgs(t, name, args)
		})
	}
}

// stagedUnits copies the units into a temporary directory with ExecStart
// pointing at a freshly built binary (systemd-analyze verify checks that the
// program exists and is executable) and returns the directory and the
// arguments naming each unit, the processor template as an instance.
func stagedUnits(t *testing.T) (string, []string) {
	t.Helper()
	bin := eventloggingBinary(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(unitDir, "eventlogging*"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(data), installBin, bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "@.service") {
			dst += ":" + strings.TrimSuffix(name, ".service") + processInstance + ".service"
		}
		args = append(args, dst)
	}
	return dir, args
}

// TestSystemdAnalyzeVerify loads every unit with systemd's own parser:
// unknown keys, bad values, missing programs and dependencies are errors,
// and so is any warning it prints.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "apt-get install systemd")
	_, files := stagedUnits(t)
	cmd := exec.CommandContext(t.Context(), analyze, append([]string{"verify", "--man=no", "--generators=no"}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdAnalyzeSecurity rates each service's sandboxing with
// systemd-analyze security (0 = fully sandboxed, 10 = none): every unit must
// stay "OK" (under 2.0).
func TestSystemdAnalyzeSecurity(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "apt-get install systemd")
	_, files := stagedUnits(t)
	for _, f := range files {
		if strings.HasSuffix(f, ".timer") {
			continue
		}
		// --threshold is on the exposure scale times ten.
		cmd := exec.CommandContext(t.Context(), analyze, "security", "--offline=true", "--threshold=20", "--no-pager", f)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", filepath.Base(f), err, out)
			continue
		}
		t.Logf("%s: %s", filepath.Base(f), lastLines(out, 1))
	}
}
