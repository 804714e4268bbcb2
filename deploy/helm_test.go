package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/process"
)

const (
	chartDir    = "helm/eventlogging"
	helmInstall = "scripts/test.sh installs it: go install helm.sh/helm/v3/cmd/helm@v3.22.0"
	release     = "el"
	// What the chart names its objects for release "el".
	fullname = "el-eventlogging"
	// The cluster version helm template renders for. A helm built with go
	// install assumes Kubernetes v1.20.0 (official builds set the version
	// of their client libraries), below the chart's kubeVersion.
	kubeVersion = "v1.30.0"
)

// rolePaths are the HTTP endpoints each role serves for its probes:
// the intake's /healthz and /readyz (internal/intake); /healthz next to
// /metrics on metrics.listen for process and sink (internal/telemetry); the
// registry's GET /, which answers once the schema log is replayed, and its
// /metrics; the dashboard's /metrics, its only route open to the kubelet
// (the others are admin routes).
var rolePaths = map[string]struct{ live, ready string }{
	"intake":    {"/healthz", "/readyz"},
	"process":   {"/healthz", "/healthz"},
	"sink":      {"/healthz", "/healthz"},
	"registry":  {"/metrics", "/"},
	"dashboard": {"/metrics", "/metrics"},
}

// The kinds each role runs as: the intake and the sink keep state on a
// volume of their own per replica.
var roleKinds = map[string]string{
	"intake": "StatefulSet", "process": "Deployment", "sink": "StatefulSet",
	"registry": "Deployment", "dashboard": "Deployment",
}

// Kubernetes objects, as far as the test reads them.
type (
	object struct {
		Kind     string `yaml:"kind"`
		Metadata meta   `yaml:"metadata"`
		node     *yaml.Node
	}
	meta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	workload struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Replicas             int           `yaml:"replicas"`
			ServiceName          string        `yaml:"serviceName"`
			Selector             labelSelector `yaml:"selector"`
			Template             podTemplate   `yaml:"template"`
			VolumeClaimTemplates []struct {
				Metadata meta `yaml:"metadata"`
			} `yaml:"volumeClaimTemplates"`
			JobTemplate struct {
				Spec struct {
					Template podTemplate `yaml:"template"`
				} `yaml:"spec"`
			} `yaml:"jobTemplate"`
		} `yaml:"spec"`
	}
	podTemplate struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
			EnableServiceLinks           *bool `yaml:"enableServiceLinks"`
			SecurityContext              struct {
				RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				RunAsUser    *int  `yaml:"runAsUser"`
				FSGroup      *int  `yaml:"fsGroup"`
			} `yaml:"securityContext"`
			Containers []container `yaml:"containers"`
			Volumes    []struct {
				Name      string                 `yaml:"name"`
				ConfigMap *struct{ Name string } `yaml:"configMap"`
				Secret    *struct {
					SecretName string `yaml:"secretName"`
				} `yaml:"secret"`
				EmptyDir *struct{} `yaml:"emptyDir"`
				PVC      *struct {
					ClaimName string `yaml:"claimName"`
				} `yaml:"persistentVolumeClaim"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	}
	container struct {
		Name  string   `yaml:"name"`
		Args  []string `yaml:"args"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		EnvFrom []struct {
			SecretRef *struct{ Name string } `yaml:"secretRef"`
		} `yaml:"envFrom"`
		StartupProbe   *probe `yaml:"startupProbe"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []volumeMount `yaml:"volumeMounts"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	}
	service struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []servicePort     `yaml:"ports"`
		} `yaml:"spec"`
	}
	servicePort struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort any    `yaml:"targetPort"`
	}
	pdb struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector       labelSelector `yaml:"selector"`
			MaxUnavailable any           `yaml:"maxUnavailable"`
			MinAvailable   any           `yaml:"minAvailable"`
		} `yaml:"spec"`
	}
	configMap struct {
		Metadata meta              `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
	serviceMonitor struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector  labelSelector `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
)

// rendered is the output of helm template, by kind.
type rendered struct {
	objects []object
}

func (r rendered) decode(t *testing.T, kind string, each func(o object)) {
	t.Helper()
	for _, o := range r.objects {
		if o.Kind == kind {
			each(o)
		}
	}
}

func (o object) into(t *testing.T, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// helmTemplate renders the chart with extra helm arguments.
func helmTemplate(t *testing.T, helm string, args ...string) rendered {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helm, append([]string{"template", release, chartDir, "--namespace", "analytics", "--kube-version", kubeVersion}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var r rendered
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		var o object
		if err := n.Decode(&o); err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if o.Kind == "" {
			continue // an empty document
		}
		o.node = &n
		r.objects = append(r.objects, o)
	}
	return r
}

// writeValues writes a values file for helm's -f.
func writeValues(t *testing.T, yamlText string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// Everything optional switched on: Kafka over TLS with SCRAM, the Secret,
// streams, the purge CronJob, ServiceMonitors.
const allValues = `
config:
  kafka:
    tls: true
    tls_ca_file: /etc/eventlogging-tls/ca.crt
    sasl_mechanism: SCRAM-SHA-512
    sasl_username: eventlogging
secrets:
  existingSecret: eventlogging-secrets
kafkaTLS:
  secretName: kafka-ca
streams:
  streams:
    - name: analytics.button_click
      schema_title: analytics/button_click
purge:
  enabled: true
metrics:
  serviceMonitor:
    enabled: true
`

// TestHelmLint runs helm lint --strict on the chart, with the default
// values and with every option on.
func TestHelmLint(t *testing.T) {
	helm := requireTool(t, "helm", helmInstall)
	for _, args := range [][]string{nil, {"-f", writeValues(t, allValues)}} {
		cmd := exec.CommandContext(t.Context(), helm, append([]string{"lint", "--strict", chartDir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("helm lint --strict %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestHelmChart renders the chart with the default values and with every
// option on, and checks what a production install needs: each role's
// workload with liveness and readiness probes on the endpoints the role
// serves, on the port it listens on; resource requests and limits and a Go
// memory limit under the memory limit; a non-root, read-only container; the
// intake's spool on its own volume at intake.spool_dir; a
// PodDisruptionBudget per role; a configuration the loader accepts; and
// command lines the binary accepts.
func TestHelmChart(t *testing.T) {
	helm := requireTool(t, "helm", helmInstall)
	t.Run("defaults", func(t *testing.T) {
		r := helmTemplate(t, helm)
		checkChart(t, r, false)
	})
	t.Run("all-options", func(t *testing.T) {
		r := helmTemplate(t, helm, "-f", writeValues(t, allValues))
		checkChart(t, r, true)
		checkServiceMonitors(t, r)
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct{ args, want string }{
			{"--set sink.replicas=2", "one sink per file root"},
			// An s3:// target takes several (fenced writers): rendered.
			{"--set sink.replicas=2 --set config.sink.files=s3://bucket/events", ""},
			{"--set config.intake.spool_dir=spool", "absolute path"},
			{"--set config.sink.files=/srv/files", "not on the sink's volume"},
		} {
			cmd := exec.CommandContext(t.Context(), helm, append([]string{"template", release, chartDir, "--kube-version", kubeVersion}, strings.Fields(tc.args)...)...)
			out, err := cmd.CombinedOutput()
			if tc.want == "" {
				if err != nil || !strings.Contains(string(out), "replicas: 2") {
					t.Errorf("helm template %s: want it rendered with 2 sink replicas, got %v\n%s", tc.args, err, lastLines(out, 3))
				}
				continue
			}
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("helm template %s: want an error with %q, got %v\n%s", tc.args, tc.want, err, lastLines(out, 3))
			}
		}
	})
}

func checkChart(t *testing.T, r rendered, all bool) {
	t.Helper()
	// The configuration, as the roles read it.
	var cm configMap
	r.decode(t, "ConfigMap", func(o object) {
		if o.Metadata.Name == fullname {
			o.into(t, &cm)
		}
	})
	cfgText, ok := cm.Data["eventlogging.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no eventlogging.yaml", fullname)
	}
	cfg := loadRenderedConfig(t, cfgText, all)
	if all {
		streams, ok := cm.Data["streams.yaml"]
		if !ok || cfg.Process.StreamsFile != "/etc/eventlogging/streams.yaml" {
			t.Errorf("streams: ConfigMap streams.yaml present %v, process.streams_file %q", ok, cfg.Process.StreamsFile)
		}
		if _, err := process.ParseStreams([]byte(streams)); err != nil {
			t.Errorf("the ConfigMap's streams.yaml: %v", err)
		}
		if _, ok := cm.Data["purge-policy.yaml"]; !ok {
			t.Error("purge.enabled: no purge-policy.yaml in the ConfigMap")
		}
	}

	services := map[string]service{}
	r.decode(t, "Service", func(o object) {
		var s service
		o.into(t, &s)
		services[s.Metadata.Name] = s
	})
	// registry.url points at the registry Service.
	if u, err := url.Parse(cfg.Registry.URL); err != nil || !serviceHasPort(services, u.Hostname(), u.Port()) {
		t.Errorf("registry.url %q: no Service %s with that port", cfg.Registry.URL, u.Hostname())
	}

	seen := map[string]workload{}
	for _, kind := range []string{"Deployment", "StatefulSet"} {
		r.decode(t, kind, func(o object) {
			var w workload
			o.into(t, &w)
			role := w.Metadata.Labels["app.kubernetes.io/component"]
			if want := roleKinds[role]; want != kind {
				t.Errorf("%s %s: role %q, want it as a %s", kind, w.Metadata.Name, role, want)
			}
			seen[role] = w
			if !labelsMatch(w.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels) {
				t.Errorf("%s: selector %v does not select its pods %v", w.Metadata.Name, w.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels)
			}
			if w.Spec.Template.Metadata.Annotations["checksum/config"] == "" {
				t.Errorf("%s: no checksum/config annotation (a configuration change would not roll the pods)", w.Metadata.Name)
			}
			if kind == "StatefulSet" {
				if _, ok := services[w.Spec.ServiceName]; !ok {
					t.Errorf("%s: serviceName %q is not a Service of the chart", w.Metadata.Name, w.Spec.ServiceName)
				}
			}
			checkPod(t, w.Metadata.Name, role, w.Spec.Template, claimNames(w), services, cfg, all)
		})
	}
	for role := range rolePaths {
		if _, ok := seen[role]; !ok {
			t.Errorf("no workload for role %s", role)
		}
	}

	// The intake's spool: a volume per replica, at intake.spool_dir.
	if w, ok := seen["intake"]; ok {
		if !slices.Contains(claimNames(w), "spool") {
			t.Errorf("intake: no spool in volumeClaimTemplates %v", claimNames(w))
		}
		c := w.Spec.Template.Spec.Containers[0]
		if m := mountAt(c, cfg.Intake.SpoolDir); m == nil || m.Name != "spool" || m.MountPath != cfg.Intake.SpoolDir {
			t.Errorf("intake: the spool volume is not mounted at intake.spool_dir %s", cfg.Intake.SpoolDir)
		}
		if w.Spec.Replicas < 2 {
			t.Errorf("intake: %d replicas, want at least 2 behind the Service", w.Spec.Replicas)
		}
	}
	if w, ok := seen["sink"]; ok && cfg.Sink.Files != "" {
		if m := mountAt(w.Spec.Template.Spec.Containers[0], cfg.Sink.Files); m == nil || m.Name != "data" || !slices.Contains(claimNames(w), "data") {
			t.Errorf("sink: sink.files %s is not on the sink's volume claim", cfg.Sink.Files)
		}
	}
	// Every Service selects pods of the chart and targets a named port.
	for name, s := range services {
		found := false
		for _, w := range seen {
			if labelsMatch(s.Spec.Selector, w.Spec.Template.Metadata.Labels) {
				found = true
				for _, p := range s.Spec.Ports {
					if !hasPort(w.Spec.Template.Spec.Containers[0], p.TargetPort) {
						t.Errorf("Service %s: targetPort %v is not a port of %s", name, p.TargetPort, w.Metadata.Name)
					}
				}
			}
		}
		if !found {
			t.Errorf("Service %s selects no pod of the chart", name)
		}
	}

	// A PodDisruptionBudget per role, selecting exactly its pods.
	budgets := map[string]int{}
	r.decode(t, "PodDisruptionBudget", func(o object) {
		var p pdb
		o.into(t, &p)
		if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
			t.Errorf("PodDisruptionBudget %s: neither maxUnavailable nor minAvailable", p.Metadata.Name)
		}
		for role, w := range seen {
			if labelsMatch(p.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels) {
				budgets[role]++
			}
		}
	})
	for role := range seen {
		if budgets[role] != 1 {
			t.Errorf("role %s: %d PodDisruptionBudgets select its pods, want 1", role, budgets[role])
		}
	}

	// The purge CronJob (all options): the sink's volume, the same checks
	// but probes (a job has none).
	jobs := 0
	r.decode(t, "CronJob", func(o object) {
		jobs++
		var w workload
		o.into(t, &w)
		pod := w.Spec.JobTemplate.Spec.Template
		c := pod.Spec.Containers[0]
		if flagValue(c.Args, "policy") == "" {
			t.Errorf("CronJob %s: no --policy", w.Metadata.Name)
		}
		if m := mountAt(c, cfg.Sink.Files); cfg.Sink.Files != "" && (m == nil || m.Name != "data") {
			t.Errorf("CronJob %s: sink.files %s is not on the sink's volume", w.Metadata.Name, cfg.Sink.Files)
		}
		checkSecurity(t, w.Metadata.Name, pod, c)
		checkResources(t, w.Metadata.Name, c)
		checkArgs(t, "CronJob "+w.Metadata.Name, podArgs(c))
	})
	if all && jobs != 1 {
		t.Errorf("purge.enabled: %d CronJobs, want 1", jobs)
	}
}

// checkPod checks one role's pod template.
func checkPod(t *testing.T, name, role string, pod podTemplate, claims []string, services map[string]service, cfg config.Config, all bool) {
	t.Helper()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	checkSecurity(t, name, pod, c)
	checkResources(t, name, c)

	// Probes: the role's endpoints, on the port its flags make it listen on.
	paths := rolePaths[role]
	listenFlag := "listen"
	if role == "process" || role == "sink" {
		listenFlag = "metrics-listen"
	}
	listen := flagValue(c.Args, listenFlag)
	if listen == "" {
		t.Errorf("%s: no --%s: the probes' port would depend on the configuration", name, listenFlag)
	}
	for _, p := range []struct {
		what string
		pr   *probe
		path string
	}{
		{"startupProbe", c.StartupProbe, paths.live},
		{"livenessProbe", c.LivenessProbe, paths.live},
		{"readinessProbe", c.ReadinessProbe, paths.ready},
	} {
		if p.pr == nil || p.pr.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s", name, p.what)
			continue
		}
		if p.pr.HTTPGet.Path != p.path {
			t.Errorf("%s: %s on %s, want %s", name, p.what, p.pr.HTTPGet.Path, p.path)
		}
		if port := containerPort(c, p.pr.HTTPGet.Port); port == 0 || ":"+strconv.Itoa(port) != listen {
			t.Errorf("%s: %s on port %v, but the role listens on %q", name, p.what, p.pr.HTTPGet.Port, listen)
		}
	}

	// Volumes: every mount has its volume; the configuration is at the
	// path of --config; what the role writes is on a writable volume.
	volumes := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil && v.ConfigMap.Name != fullname {
			t.Errorf("%s: volume %s is ConfigMap %s, want %s", name, v.Name, v.ConfigMap.Name, fullname)
		}
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] && !slices.Contains(claims, m.Name) {
			t.Errorf("%s: mount %s has no volume", name, m.Name)
		}
	}
	if m := mountAt(c, flagValue(c.Args, "config")); m == nil || m.Name != "config" {
		t.Errorf("%s: --config %s is not on the config volume", name, flagValue(c.Args, "config"))
	}
	if m := mountAt(c, "/tmp/x"); m == nil || m.ReadOnly {
		t.Errorf("%s: no writable /tmp (the root filesystem is read-only)", name)
	}
	if all {
		if m := mountAt(c, cfg.Kafka.TLSCAFile); m == nil || m.Name != "kafka-tls" {
			t.Errorf("%s: kafka.tls_ca_file %s is not on the kafka-tls volume", name, cfg.Kafka.TLSCAFile)
		}
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "eventlogging-secrets" {
			t.Errorf("%s: the secrets.existingSecret is not in envFrom", name)
		}
	}
	if role == "dashboard" {
		for _, h := range strings.Split(flagValue(c.Args, "health"), ",") {
			_, u, _ := strings.Cut(h, "=")
			if pu, err := url.Parse(u); err != nil || !serviceHasPort(services, pu.Hostname(), pu.Port()) {
				t.Errorf("%s: --health %q: not ROLE=URL of a Service of the chart", name, h)
			}
		}
	}
	checkArgs(t, name, podArgs(c))
}

func checkSecurity(t *testing.T, name string, pod podTemplate, c container) {
	t.Helper()
	sc := pod.Spec.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: pod securityContext: want runAsNonRoot: true and a non-zero runAsUser", name)
	}
	if sc.FSGroup == nil {
		t.Errorf("%s: pod securityContext: no fsGroup (volumes would not be writable by the user)", name)
	}
	if p := pod.Spec.AutomountServiceAccountToken; p == nil || *p {
		t.Errorf("%s: automountServiceAccountToken is not false (no role uses the Kubernetes API)", name)
	}
	if p := pod.Spec.EnableServiceLinks; p == nil || *p {
		t.Errorf("%s: enableServiceLinks is not false (Service variables such as EVENTLOGGING_INTAKE_PORT would mix with the configuration's)", name)
	}
	cs := c.SecurityContext
	if cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", name)
	}
	if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", name)
	}
	if !slices.Contains(cs.Capabilities.Drop, "ALL") {
		t.Errorf("%s: capabilities do not drop ALL", name)
	}
}

// checkResources: requests, limits, and GOMEMLIMIT under the memory limit.
func checkResources(t *testing.T, name string, c container) {
	t.Helper()
	for _, k := range []string{"cpu", "memory"} {
		if c.Resources.Requests[k] == "" {
			t.Errorf("%s: no %s request", name, k)
		}
	}
	limit, err := parseBytes(c.Resources.Limits["memory"], k8sUnits)
	if err != nil {
		t.Errorf("%s: memory limit: %v", name, err)
		return
	}
	var goLimit string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			goLimit = e.Value
		}
	}
	if gl, err := parseBytes(goLimit, goUnits); err != nil {
		t.Errorf("%s: GOMEMLIMIT: %v", name, err)
	} else if gl >= limit {
		t.Errorf("%s: GOMEMLIMIT %s is not under the memory limit %s", name, goLimit, c.Resources.Limits["memory"])
	}
}

// loadRenderedConfig loads the rendered eventlogging.yaml with the
// configuration loader. The Kafka TLS files are mounted from a Secret at
// run time: a temporary file stands in for them, and for the SASL password
// of the Secret.
func loadRenderedConfig(t *testing.T, text string, all bool) config.Config {
	t.Helper()
	unsetEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "eventlogging.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var raw config.Config
	if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
		t.Fatal(err)
	}
	if all {
		ca := filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(ca, []byte("stand-in\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("EVENTLOGGING_KAFKA_TLS_CA_FILE", ca)
		t.Setenv("EVENTLOGGING_KAFKA_SASL_PASSWORD", "from-the-secret")
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("the chart's eventlogging.yaml: %v\n%s", err, text)
	}
	cfg.Kafka.TLSCAFile = raw.Kafka.TLSCAFile // the path the pods see
	return cfg
}

func podArgs(c container) []string {
	r := strings.NewReplacer("$(POD_NAME)", "el-eventlogging-0", "$(POD_IP)", "10.0.0.7")
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = r.Replace(a)
	}
	return out
}

func claimNames(w workload) []string {
	var out []string
	for _, c := range w.Spec.VolumeClaimTemplates {
		out = append(out, c.Metadata.Name)
	}
	return out
}

// mountAt is the container's mount that holds file (the deepest), or nil.
func mountAt(c container, file string) *volumeMount {
	best := -1
	for i, m := range c.VolumeMounts {
		if file == m.MountPath || strings.HasPrefix(path.Clean(file), strings.TrimSuffix(m.MountPath, "/")+"/") {
			if best < 0 || len(m.MountPath) > len(c.VolumeMounts[best].MountPath) {
				best = i
			}
		}
	}
	if best < 0 || file == "" {
		return nil
	}
	return &c.VolumeMounts[best]
}

// containerPort resolves a probe's or Service's port (a number or a port
// name) to the container's port number; 0 when it has no such port.
func containerPort(c container, port any) int {
	for _, p := range c.Ports {
		switch v := port.(type) {
		case string:
			if p.Name == v {
				return p.ContainerPort
			}
		case int:
			if p.ContainerPort == v {
				return v
			}
		}
	}
	return 0
}

func hasPort(c container, port any) bool { return containerPort(c, port) != 0 }

func serviceHasPort(services map[string]service, name, port string) bool {
	s, ok := services[name]
	if !ok {
		return false
	}
	for _, p := range s.Spec.Ports {
		if strconv.Itoa(p.Port) == port {
			return true
		}
	}
	return false
}

// labelsMatch reports whether selector (non-empty) selects labels.
func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkServiceMonitors: one per role, each scraping /metrics on a port its
// Services have, and not the intake's headless Service twice.
func checkServiceMonitors(t *testing.T, r rendered) {
	t.Helper()
	services := map[string]service{}
	r.decode(t, "Service", func(o object) {
		var s service
		o.into(t, &s)
		services[s.Metadata.Name] = s
	})
	roles := map[string]bool{}
	r.decode(t, "ServiceMonitor", func(o object) {
		var sm serviceMonitor
		o.into(t, &sm)
		role := sm.Metadata.Labels["app.kubernetes.io/component"]
		roles[role] = true
		var matched []string
		for name, s := range services {
			if labelsMatch(sm.Spec.Selector.MatchLabels, s.Metadata.Labels) && s.Metadata.Labels["eventlogging.io/service"] != "headless" {
				matched = append(matched, name)
				for _, e := range sm.Spec.Endpoints {
					if !slices.ContainsFunc(s.Spec.Ports, func(p servicePort) bool { return p.Name == e.Port }) || e.Path != "/metrics" {
						t.Errorf("ServiceMonitor %s: endpoint %s%s is not a port of Service %s serving /metrics", sm.Metadata.Name, e.Port, e.Path, name)
					}
				}
			}
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects Services %v, want one", sm.Metadata.Name, matched)
		}
	})
	if got := slices.Sorted(maps.Keys(roles)); !slices.Equal(got, slices.Sorted(maps.Keys(rolePaths))) {
		t.Errorf("ServiceMonitors for %v, want one per role", got)
	}
}
