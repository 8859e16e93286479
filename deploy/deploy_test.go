package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/sketch"
)

func TestPromtoolCheckRules(t *testing.T) {
	promtool := testenv.RequireCommand(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", RuleFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", RuleFile, err, out)
	}
	if !bytes.Contains(out, []byte("SUCCESS")) {
		t.Errorf("promtool check rules said:\n%s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := testenv.RequireCommand(t, "promtool")
	cmd := exec.Command(promtool, "test", "rules", "hotkeyd-rules.test.yml")
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("SUCCESS")) {
		t.Errorf("promtool test rules said:\n%s", out)
	}
}

// ruleFile is the part of a Prometheus rule file the tests look at.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(RuleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", RuleFile, err)
	}
	return rf
}

// Every alert follows the conventions the docs promise: CamelCase name, a
// severity, a summary and description, a runbook URL pointing at its own
// section of docs/monitoring.md, and a unit test in the test file.
func TestAlertConventions(t *testing.T) {
	rf := readRules(t)
	tests, err := os.ReadFile("prometheus/hotkeyd-rules.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HotKey", "HotKeyNearPartitionLimit", "LowCardinalityPartitionKey", "TimeOrderedPartitionKey", "HotPartition", "TableShortOfCapacity",
		"StreamReaderLagging", "StreamReaderErrors", "LeasesLost", "HotkeydDown", "HotkeydNoEvents"}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				if !strings.Contains(r.Record, ":") {
					t.Errorf("recording rule %q: name is not level:metric:operations", r.Record)
				}
				continue
			}
			alerts = append(alerts, r.Alert)
			if r.Alert[0] < 'A' || r.Alert[0] > 'Z' || strings.ContainsAny(r.Alert, "_- ") {
				t.Errorf("alert %q is not CamelCase", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: summary or description missing", r.Alert)
			}
			wantURL := "https://github.com/hotkeyd/hotkeyd/blob/main/docs/monitoring.md#" + strings.ToLower(r.Alert)
			if r.Annotations["runbook_url"] != wantURL {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], wantURL)
			}
			if r.For == "" {
				t.Errorf("alert %s: no for: duration; it would fire on one evaluation", r.Alert)
			}
			if !bytes.Contains(tests, []byte("alertname: "+r.Alert+"\n")) {
				t.Errorf("alert %s has no promtool unit test", r.Alert)
			}
		}
	}
	for _, w := range want {
		if !slices.Contains(alerts, w) {
			t.Errorf("alert %s missing; have %v", w, alerts)
		}
	}
	if got := readRules(t).Groups[0].Rules[0].Record; got != "table_class:hotkeyd_units:rate1m" {
		t.Errorf("first recording rule %q, want table_class:hotkeyd_units:rate1m", got)
	}
}

// diagnosisFilter reads the cause and severity matchers of an alert on
// hotkeyd_diagnosis.
var diagnosisFilter = regexp.MustCompile(`hotkeyd_diagnosis\{cause="([a-z_]+)", severity="([a-z]+)"\}`)

// Every cause of a diagnosis pages at warning and at critical, through an
// alert whose severity label is the diagnosis's severity, and info never
// pages: each alert on hotkeyd_diagnosis selects one cause and one paging
// severity, and its label says the same. partition_limit is critical by
// definition (its peak is at the limit), so it has no warning rule.
func TestDiagnosisAlerts(t *testing.T) {
	rf := readRules(t)
	covered := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || !strings.Contains(r.Expr, "hotkeyd_diagnosis") {
				continue
			}
			m := diagnosisFilter.FindStringSubmatch(r.Expr)
			if m == nil {
				t.Errorf("alert %s: %q does not select one cause and one severity", r.Alert, r.Expr)
				continue
			}
			cause, sev := m[1], m[2]
			if sev != r.Labels["severity"] || sev == "info" {
				t.Errorf("alert %s on %s: selects severity %q, labelled %q", r.Alert, cause, sev, r.Labels["severity"])
			}
			if strings.Contains(r.Expr, "hotkeyd_hot_key") {
				t.Errorf("alert %s also alerts on findings: one alert per diagnosis", r.Alert)
			}
			covered[cause+" "+sev] = true
		}
	}
	for _, cause := range []string{"hot_key", "partition_limit", "low_cardinality", "time_ordered_key", "hot_partition", "capacity"} {
		for _, sev := range []string{"warning", "critical"} {
			if cause == "partition_limit" && sev == "warning" {
				continue
			}
			if !covered[cause+" "+sev] {
				t.Errorf("no %s alert for %s diagnoses", sev, cause)
			}
		}
	}
}

// The PrometheusRule manifest is what `go generate` writes, and its groups
// are the rule file's groups.
func TestPrometheusRuleInSync(t *testing.T) {
	rules, err := os.ReadFile(RuleFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := PrometheusRule(rules, "hotkeyd")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(PrometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: run go generate ./deploy", PrometheusRuleFile)
	}

	var ruleDoc map[string]any
	if err := yaml.Unmarshal(rules, &ruleDoc); err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(got, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("PrometheusRule is %s %s", pr.APIVersion, pr.Kind)
	}
	if ruleDoc["groups"] == nil || !reflect.DeepEqual(pr.Spec.Groups, ruleDoc["groups"]) {
		t.Errorf("spec.groups of %s differ from the groups of %s", PrometheusRuleFile, RuleFile)
	}
}

func TestPrometheusRuleRejectsNonRuleFiles(t *testing.T) {
	for _, in := range []string{"", "- a\n- b\n", "groups: {a: 1}\n", "rules: []\n", "groups: [\n"} {
		if _, err := PrometheusRule([]byte(in), "x"); err == nil {
			t.Errorf("PrometheusRule(%q) succeeded, want an error", in)
		}
	}
}

// manifest is one Kubernetes object, decoded generically.
type manifest struct {
	file string
	obj  map[string]any
}

func (m manifest) kind() string { s, _ := m.obj["kind"].(string); return s }

func (m manifest) name() string { s, _ := dig(m.obj, "metadata", "name").(string); return s }

// dig walks nested maps and lists: string steps index maps, int steps lists.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// readManifests decodes every YAML document of the folder's *.yaml files.
func readManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for i := 0; ; i++ {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if obj == nil {
				continue
			}
			out = append(out, manifest{file: f, obj: obj})
		}
	}
	return out
}

func TestKubernetesManifests(t *testing.T) {
	all := readManifests(t, "kubernetes")
	apiVersions := map[string]string{
		"Kustomization":  "kustomize.config.k8s.io/v1beta1",
		"ServiceAccount": "v1",
		"ConfigMap":      "v1",
		"Deployment":     "apps/v1",
		"Service":        "v1",
		"ServiceMonitor": "monitoring.coreos.com/v1",
		"PrometheusRule": "monitoring.coreos.com/v1",
	}
	byKind := map[string]manifest{}
	for _, m := range all {
		want, ok := apiVersions[m.kind()]
		if !ok {
			t.Errorf("%s: unexpected kind %q", m.file, m.kind())
			continue
		}
		if got := m.obj["apiVersion"]; got != want {
			t.Errorf("%s: %s apiVersion %v, want %s", m.file, m.kind(), got, want)
		}
		if m.kind() != "Kustomization" && m.name() != "hotkeyd" {
			t.Errorf("%s: %s metadata.name %q, want hotkeyd", m.file, m.kind(), m.name())
		}
		if _, dup := byKind[m.kind()]; dup {
			t.Errorf("%s: second %s", m.file, m.kind())
		}
		byKind[m.kind()] = m
	}
	for kind := range apiVersions {
		if _, ok := byKind[kind]; !ok {
			t.Errorf("no %s manifest", kind)
		}
	}

	t.Run("kustomization lists every manifest", func(t *testing.T) {
		var listed []string
		for _, r := range dig(byKind["Kustomization"].obj, "resources").([]any) {
			listed = append(listed, filepath.Join("kubernetes", r.(string)))
		}
		var files []string
		for _, m := range all {
			if m.kind() != "Kustomization" && !slices.Contains(files, m.file) {
				files = append(files, m.file)
			}
		}
		sort.Strings(listed)
		sort.Strings(files)
		if !slices.Equal(listed, files) {
			t.Errorf("kustomization resources %v, manifests %v", listed, files)
		}
	})

	dep := byKind["Deployment"].obj
	pod := dig(dep, "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	t.Run("deployment", func(t *testing.T) {
		if c == nil {
			t.Fatal("no container")
		}
		sel, tmpl := dig(dep, "spec", "selector", "matchLabels"), dig(dep, "spec", "template", "metadata", "labels")
		if !subset(sel, tmpl) {
			t.Errorf("selector %v does not match template labels %v", sel, tmpl)
		}
		if got := dig(c, "livenessProbe", "httpGet", "path"); got != "/-/healthy" {
			t.Errorf("livenessProbe path %v, want /-/healthy", got)
		}
		if got := dig(c, "readinessProbe", "httpGet", "path"); got != "/-/ready" {
			t.Errorf("readinessProbe path %v, want /-/ready", got)
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			// The probes carry no credentials, so they must hit paths served
			// without them when the web config turns basic auth on.
			if p, _ := dig(c, probe, "httpGet", "path").(string); !slices.Contains(export.ProbePaths(), p) {
				t.Errorf("%s path %q is behind basic auth when it is on; probes send no credentials (served without: %v)", probe, p, export.ProbePaths())
			}
			if h := dig(c, probe, "httpGet", "httpHeaders"); h != nil {
				t.Errorf("%s sends headers %v: credentials do not belong in a manifest", probe, h)
			}
			if s := dig(c, probe, "httpGet", "scheme"); s != nil && s != "HTTP" && s != "HTTPS" {
				t.Errorf("%s scheme %v", probe, s)
			}
			if p := dig(c, probe, "httpGet", "port"); p != "http" && p != 9529 {
				t.Errorf("%s port %v, want the http port", probe, p)
			}
		}
		if dig(c, "ports", 0, "containerPort") != 9529 || dig(c, "ports", 0, "name") != "http" {
			t.Errorf("container port %v, want http 9529", dig(c, "ports"))
		}
		if dig(pod, "securityContext", "runAsNonRoot") != true || dig(c, "securityContext", "runAsNonRoot") != true {
			t.Error("runAsNonRoot is not set on pod and container")
		}
		if uid, ok := dig(pod, "securityContext", "runAsUser").(int); !ok || uid == 0 {
			t.Errorf("pod runAsUser %v, want a numeric non-root UID", dig(pod, "securityContext", "runAsUser"))
		}
		if dig(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Error("readOnlyRootFilesystem is not true")
		}
		if dig(c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Error("allowPrivilegeEscalation is not false")
		}
		if dig(c, "securityContext", "capabilities", "drop", 0) != "ALL" {
			t.Error("capabilities are not all dropped")
		}
		for _, r := range []string{"requests", "limits"} {
			if dig(c, "resources", r, "memory") == nil {
				t.Errorf("no memory %s", r)
			}
		}
		if dig(c, "resources", "requests", "cpu") == nil {
			t.Error("no cpu request")
		}
		args := strings.Join(toStrings(dig(c, "args")), " ")
		if !strings.Contains(args, "--config.file=/etc/hotkeyd/hotkeyd.yaml") || !strings.Contains(args, "--web.listen-address=:9529") {
			t.Errorf("args %q do not name the config file and port", args)
		}
		if dig(pod, "serviceAccountName") != byKind["ServiceAccount"].name() {
			t.Errorf("serviceAccountName %v", dig(pod, "serviceAccountName"))
		}
	})

	t.Run("config comes from the ConfigMap and the state dir is writable", func(t *testing.T) {
		mounts := map[string]string{} // volume name -> mount path
		for _, m := range dig(c, "volumeMounts").([]any) {
			mounts[dig(m, "name").(string)] = dig(m, "mountPath").(string)
		}
		var cmVolume string
		var emptyDirs []string
		for _, v := range dig(pod, "volumes").([]any) {
			if n := dig(v, "configMap", "name"); n != nil {
				if n != byKind["ConfigMap"].name() {
					t.Errorf("volume %v uses ConfigMap %v", dig(v, "name"), n)
				}
				cmVolume = dig(v, "name").(string)
			}
			if dig(v, "emptyDir") != nil || dig(v, "persistentVolumeClaim") != nil {
				emptyDirs = append(emptyDirs, mounts[dig(v, "name").(string)])
			}
		}
		if mounts[cmVolume] != "/etc/hotkeyd" {
			t.Errorf("ConfigMap volume mounted at %q, want /etc/hotkeyd", mounts[cmVolume])
		}
		conf, ok := dig(byKind["ConfigMap"].obj, "data", "hotkeyd.yaml").(string)
		if !ok {
			t.Fatal("ConfigMap has no hotkeyd.yaml")
		}
		var hc struct {
			Listen  string `yaml:"listen"`
			Sources []struct {
				Type          string `yaml:"type"`
				CheckpointDir string `yaml:"checkpoint_dir"`
			} `yaml:"sources"`
		}
		if err := yaml.Unmarshal([]byte(conf), &hc); err != nil {
			t.Fatalf("ConfigMap hotkeyd.yaml: %v", err)
		}
		if hc.Listen != ":9529" || len(hc.Sources) == 0 || hc.Sources[0].Type != "dynamodb-streams" {
			t.Errorf("ConfigMap hotkeyd.yaml: %+v, want a dynamodb-streams source listening on :9529", hc)
		}
		for _, s := range hc.Sources {
			if s.CheckpointDir != "" && !slices.Contains(emptyDirs, s.CheckpointDir) {
				t.Errorf("checkpoint_dir %q is not a writable volume (root filesystem is read-only); writable: %v", s.CheckpointDir, emptyDirs)
			}
		}
	})

	t.Run("service and servicemonitor reach the pod", func(t *testing.T) {
		svc := byKind["Service"].obj
		if !subset(dig(svc, "spec", "selector"), dig(dep, "spec", "template", "metadata", "labels")) {
			t.Errorf("Service selector %v does not select the pods", dig(svc, "spec", "selector"))
		}
		if dig(svc, "spec", "ports", 0, "port") != 9529 || dig(svc, "spec", "ports", 0, "targetPort") != "http" {
			t.Errorf("Service ports %v, want 9529 -> http", dig(svc, "spec", "ports"))
		}
		sm := byKind["ServiceMonitor"].obj
		if !subset(dig(sm, "spec", "selector", "matchLabels"), dig(svc, "metadata", "labels")) {
			t.Errorf("ServiceMonitor selector %v does not select the Service", dig(sm, "spec", "selector"))
		}
		if dig(sm, "spec", "endpoints", 0, "port") != dig(svc, "spec", "ports", 0, "name") || dig(sm, "spec", "endpoints", 0, "path") != "/metrics" {
			t.Errorf("ServiceMonitor endpoints %v", dig(sm, "spec", "endpoints"))
		}
		// The alert rules match job="hotkeyd": the operator's job label is
		// the Service name.
		if byKind["Service"].name() != "hotkeyd" {
			t.Errorf("Service name %q, the rules expect job=hotkeyd", byKind["Service"].name())
		}
	})
}

// The multi-replica overlay: a kustomization over the base with patches
// that make the Deployment several replicas rolled one at a time and spread
// over nodes, a ConfigMap whose streams sources share a lease table instead
// of checkpoint files, and a PodDisruptionBudget. Where kubectl is
// installed, the overlay is also rendered by kustomize itself.
func TestKubernetesReplicasOverlay(t *testing.T) {
	const dir = "kubernetes-replicas"
	byKind := map[string]manifest{}
	for _, m := range readManifests(t, dir) {
		byKind[m.kind()] = m
	}
	base := map[string]manifest{}
	for _, m := range readManifests(t, "kubernetes") {
		base[m.kind()] = m
	}
	kust := byKind["Kustomization"].obj
	if !slices.Contains(toStrings(dig(kust, "resources")), "../kubernetes") {
		t.Errorf("overlay resources %v do not include the base ../kubernetes", dig(kust, "resources"))
	}
	if dig(kust, "namespace") != dig(base["Kustomization"].obj, "namespace") {
		t.Errorf("overlay namespace %v, base %v", dig(kust, "namespace"), dig(base["Kustomization"].obj, "namespace"))
	}
	listed := toStrings(dig(kust, "resources"))
	for _, p := range dig(kust, "patches").([]any) {
		listed = append(listed, dig(p, "path").(string))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(listed, b) {
			t.Errorf("%s is neither a resource nor a patch of the overlay", f)
		}
	}

	podLabels := dig(base["Deployment"].obj, "spec", "template", "metadata", "labels")
	dep := byKind["Deployment"].obj
	replicas, _ := dig(dep, "spec", "replicas").(int)
	if replicas < 2 || byKind["Deployment"].name() != base["Deployment"].name() {
		t.Errorf("Deployment patch %q: %d replicas, want the base Deployment with at least 2", byKind["Deployment"].name(), replicas)
	}
	if dig(dep, "spec", "strategy", "type") != "RollingUpdate" || dig(dep, "spec", "strategy", "rollingUpdate", "maxUnavailable") != 1 {
		t.Errorf("strategy %v, want a rolling update one replica at a time", dig(dep, "spec", "strategy"))
	}
	if !subset(dig(dep, "spec", "template", "spec", "topologySpreadConstraints", 0, "labelSelector", "matchLabels"), podLabels) {
		t.Errorf("topology spread does not select the pods")
	}

	pdb := byKind["PodDisruptionBudget"]
	if pdb.obj["apiVersion"] != "policy/v1" || !subset(dig(pdb.obj, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("PodDisruptionBudget %v does not select the pods", pdb.obj)
	}
	if mu, _ := dig(pdb.obj, "spec", "maxUnavailable").(int); mu < 1 || mu >= replicas {
		t.Errorf("PodDisruptionBudget maxUnavailable %v with %d replicas", dig(pdb.obj, "spec", "maxUnavailable"), replicas)
	}

	cm := byKind["ConfigMap"]
	if cm.name() != base["ConfigMap"].name() {
		t.Errorf("ConfigMap patch names %q, base %q", cm.name(), base["ConfigMap"].name())
	}
	var hc struct {
		Sources []struct {
			Type          string `yaml:"type"`
			CheckpointDir string `yaml:"checkpoint_dir"`
			LeaseTable    string `yaml:"lease_table"`
			WorkerID      string `yaml:"worker_id"`
		} `yaml:"sources"`
	}
	if err := yaml.Unmarshal([]byte(dig(cm.obj, "data", "hotkeyd.yaml").(string)), &hc); err != nil {
		t.Fatal(err)
	}
	for _, s := range hc.Sources {
		if s.Type == "dynamodb-streams" && (s.LeaseTable == "" || s.CheckpointDir != "" || s.WorkerID != "") {
			t.Errorf("overlay streams source %+v: want a lease_table, no checkpoint_dir, and the default worker_id (the pod name differs per replica)", s)
		}
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Logf("kubectl not found, overlay checked structurally only: %v", err)
		return
	}
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	kinds := map[string]map[string]any{}
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		kinds[obj["kind"].(string)] = obj
	}
	rendered := kinds["Deployment"]
	if dig(rendered, "spec", "replicas") != replicas || dig(rendered, "spec", "strategy", "type") != "RollingUpdate" ||
		dig(rendered, "spec", "template", "spec", "containers", 0, "image") != dig(base["Deployment"].obj, "spec", "template", "spec", "containers", 0, "image") {
		t.Errorf("rendered Deployment: replicas %v, strategy %v", dig(rendered, "spec", "replicas"), dig(rendered, "spec", "strategy"))
	}
	if conf, _ := dig(kinds["ConfigMap"], "data", "hotkeyd.yaml").(string); !strings.Contains(conf, "lease_table:") {
		t.Errorf("rendered ConfigMap has no lease_table:\n%s", conf)
	}
	if dig(kinds["PodDisruptionBudget"], "metadata", "namespace") != dig(kust, "namespace") {
		t.Errorf("rendered PodDisruptionBudget namespace %v", dig(kinds["PodDisruptionBudget"], "metadata", "namespace"))
	}
}

func subset(small, big any) bool {
	s, ok1 := small.(map[string]any)
	b, ok2 := big.(map[string]any)
	if !ok1 || !ok2 || len(s) == 0 {
		return false
	}
	for k, v := range s {
		if b[k] != v {
			return false
		}
	}
	return true
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestIAMPolicyIsLeastPrivilege(t *testing.T) {
	b, err := os.ReadFile("iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var pol struct {
		Version   string
		Statement []struct {
			Sid      string
			Effect   string
			Action   []string
			Resource any
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pol); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	if pol.Version != "2012-10-17" {
		t.Errorf("Version %q", pol.Version)
	}
	var actions []string
	for _, s := range pol.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement %s: Effect %q", s.Sid, s.Effect)
		}
		actions = append(actions, s.Action...)
		for _, a := range s.Action {
			if strings.Contains(a, "*") {
				t.Errorf("statement %s: wildcard action %q", s.Sid, a)
			}
		}
		var resources []string
		switch r := s.Resource.(type) {
		case string:
			resources = []string{r}
		case []any:
			resources = toStrings(r)
		}
		for _, r := range resources {
			// ListStreams has no resource-level permissions in IAM; every
			// other action is scoped to the watched tables and streams, and
			// the writes to the lease table alone.
			if r == "*" && !slices.Equal(s.Action, []string{"dynamodb:ListStreams"}) {
				t.Errorf("statement %s: Resource * for %v", s.Sid, s.Action)
			}
			lease := r == "arn:aws:dynamodb:REGION:ACCOUNT_ID:table/LEASE_TABLE_NAME"
			placeholder := strings.HasPrefix(r, "arn:aws:dynamodb:REGION:ACCOUNT_ID:table/TABLE_NAME") ||
				r == "arn:aws:kinesis:REGION:ACCOUNT_ID:stream/STREAM_NAME" || strings.HasPrefix(r, "arn:aws:s3:::BUCKET_NAME")
			if r != "*" && !lease && !placeholder {
				t.Errorf("statement %s: resource %q is not a placeholder table, stream or bucket ARN", s.Sid, r)
			}
			for _, a := range s.Action {
				write := slices.Contains([]string{"dynamodb:CreateTable", "dynamodb:Scan", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, a)
				if write && !lease {
					t.Errorf("statement %s: %s on %q: the lease table's actions belong to the lease table only", s.Sid, a, r)
				}
			}
		}
	}
	sort.Strings(actions)
	// DescribeTable twice: on the watched tables and on the lease table.
	// The Kinesis reader's four calls; the S3 reader's two (list the
	// bucket, get an object).
	want := []string{"dynamodb:CreateTable", "dynamodb:DeleteItem", "dynamodb:DescribeStream", "dynamodb:DescribeTable", "dynamodb:DescribeTable",
		"dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem",
		"kinesis:DescribeStreamSummary", "kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:ListShards",
		"s3:GetObject", "s3:ListBucket"}
	if !slices.Equal(actions, want) {
		t.Errorf("actions %v, want exactly %v", actions, want)
	}
}

// unitSettings reads a systemd unit into section.key -> values.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: line %q is not key=value", path, line)
			}
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	const path = "systemd/hotkeyd.service"
	s := unitSettings(t, path)
	want := map[string]string{
		"Service.DynamicUser":             "yes",
		"Service.StateDirectory":          "hotkeyd",
		"Service.NoNewPrivileges":         "yes",
		"Service.ProtectSystem":           "strict",
		"Service.ProtectHome":             "yes",
		"Service.PrivateTmp":              "yes",
		"Service.PrivateDevices":          "yes",
		"Service.CapabilityBoundingSet":   "",
		"Service.RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"Service.Restart":                 "on-failure",
		"Install.WantedBy":                "multi-user.target",
	}
	for k, v := range want {
		if got := s[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	start := strings.Join(s["Service.ExecStart"], " ")
	if !strings.Contains(start, "--config.file=/etc/hotkeyd/hotkeyd.yaml") || !strings.Contains(start, "--web.listen-address=:9529") {
		t.Errorf("ExecStart %q", start)
	}

	// systemd's own parser, where there is one: copy the unit with an
	// ExecStart that exists here and require a clean verify.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze not found, unit parsed structurally only: %v", err)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "hotkeyd.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(b, []byte("/usr/local/bin/hotkeyd"), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	type stage struct {
		base, name string
		lines      []string
	}
	var stages []*stage
	// Join continuation lines, drop comments, split into instructions.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		instr := strings.ToUpper(f[0])
		switch {
		case instr == "FROM":
			st := &stage{base: f[1]}
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				st.name = f[3]
			}
			stages = append(stages, st)
		case len(stages) == 0 && instr != "ARG":
			t.Fatalf("%s before the first FROM", instr)
		case !slices.Contains([]string{"ARG", "RUN", "COPY", "WORKDIR", "ENV", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL"}, instr):
			t.Errorf("unexpected instruction %q", line)
		default:
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.base, "golang:") || build.name == "" {
		t.Errorf("build stage FROM %s AS %q, want a named golang stage", build.base, build.name)
	}
	has := func(st *stage, prefix, substr string) bool {
		for _, l := range st.lines {
			if strings.HasPrefix(l, prefix) && strings.Contains(l, substr) {
				return true
			}
		}
		return false
	}
	if !has(build, "RUN", "CGO_ENABLED=0") || !has(build, "RUN", "go build") || !has(build, "RUN", "./cmd/hotkeyd") {
		t.Error("build stage does not build ./cmd/hotkeyd with CGO_ENABLED=0")
	}
	if final.base != "scratch" && !strings.HasPrefix(final.base, "gcr.io/distroless/static") {
		t.Errorf("runtime stage FROM %s, want distroless static or scratch", final.base)
	}
	if !has(final, "COPY", "--from="+build.name) {
		t.Errorf("runtime stage does not copy the binary from %q", build.name)
	}
	if !has(final, "USER", "65532") {
		t.Error("runtime stage does not run as the numeric nonroot user 65532")
	}
	if !has(final, "EXPOSE", "9529") {
		t.Error("runtime stage does not expose 9529")
	}
	if !has(final, "ENTRYPOINT", `["/usr/local/bin/hotkeyd"]`) {
		t.Error("ENTRYPOINT is not the exec form of the binary")
	}
}

// The example configuration in the ConfigMap passes hotkeyd's own
// --config.check, and the check is not a rubber stamp.
func TestConfigMapPassesConfigCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hotkeyd binary")
	}
	var conf, replicasConf string
	for _, m := range readManifests(t, "kubernetes") {
		if m.kind() == "ConfigMap" {
			conf, _ = dig(m.obj, "data", "hotkeyd.yaml").(string)
		}
	}
	for _, m := range readManifests(t, "kubernetes-replicas") {
		if m.kind() == "ConfigMap" {
			replicasConf, _ = dig(m.obj, "data", "hotkeyd.yaml").(string)
		}
	}
	if conf == "" || replicasConf == "" {
		t.Fatal("no hotkeyd.yaml in a ConfigMap")
	}
	bin := testenv.Binary(t)
	check := func(content string) (int, string) {
		path := filepath.Join(t.TempDir(), "hotkeyd.yaml")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--config.check", "--config.file="+path).CombinedOutput()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return exitErr.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := check(conf); code != 0 {
		t.Errorf("hotkeyd --config.check on the ConfigMap's hotkeyd.yaml: status %d\n%s", code, out)
	}
	if code, out := check(replicasConf); code != 0 {
		t.Errorf("hotkeyd --config.check on the replicas overlay's hotkeyd.yaml: status %d\n%s", code, out)
	}
	bad := strings.Replace(conf, "threshold: 0.10", "threshold: 2", 1)
	if bad == conf {
		t.Fatal("ConfigMap hotkeyd.yaml has no threshold: 0.10 line to break")
	}
	if code, out := check(bad); code == 0 {
		t.Errorf("hotkeyd --config.check accepted threshold 2:\n%s", out)
	}
}

// Every alert's runbook_url anchor resolves: docs/monitoring.md has a
// heading named after the alert (GitHub's anchor is the lowercased name).
func TestRunbookSectionsExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			headings[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			_, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
			if !headings[anchor] {
				t.Errorf("alert %s: docs/monitoring.md has no section %q for its runbook_url", r.Alert, anchor)
			}
		}
	}
}

// TestMemoryLimitsFitBudget checks the shipped memory limits against the
// memory model (sketch.Config.MemoryBudget at the max_tables the shipped
// config sets, or the default): GOMEMLIMIT leaves the collector a quarter
// of the budget for garbage, and the hard limit (the container's, the
// unit's MemoryMax) is a tenth above GOMEMLIMIT, for what the Go heap does
// not count (stacks, runtime, buffers in the kernel's accounting).
func TestMemoryLimitsFitBudget(t *testing.T) {
	type shipped struct {
		where           string
		maxTables       int
		goMemLimit, max int64
	}
	var all []shipped
	for _, dir := range []string{"kubernetes", "kubernetes-replicas"} {
		s := shipped{where: dir}
		var dep any
		for _, m := range readManifests(t, dir) {
			switch m.kind() {
			case "ConfigMap":
				var conf struct {
					MaxTables int `yaml:"max_tables"`
				}
				text, _ := dig(m.obj, "data", "hotkeyd.yaml").(string)
				if err := yaml.Unmarshal([]byte(text), &conf); err != nil {
					t.Fatalf("%s: %v", m.file, err)
				}
				s.maxTables = conf.MaxTables
			case "Deployment":
				dep = m.obj
			}
		}
		c := dig(dep, "spec", "template", "spec", "containers", 0)
		if c == nil {
			if dir == "kubernetes" {
				t.Fatalf("%s: no Deployment container", dir)
			}
			// An overlay patching the base's Deployment but not its
			// container: the base's limits hold with the overlay's
			// max_tables.
			base := all[0]
			base.where, base.maxTables = dir, s.maxTables
			all = append(all, base)
			continue
		}
		s.max = quantity(t, dir+" limits.memory", fmt.Sprint(dig(c, "resources", "limits", "memory")))
		envs, _ := dig(c, "env").([]any)
		for _, e := range envs {
			if dig(e, "name") == "GOMEMLIMIT" {
				s.goMemLimit = quantity(t, dir+" GOMEMLIMIT", fmt.Sprint(dig(e, "value")))
			}
		}
		all = append(all, s)
	}
	unit := unitSettings(t, "systemd/hotkeyd.service")
	u := shipped{where: "systemd"}
	for _, e := range unit["Service.Environment"] {
		if v, ok := strings.CutPrefix(e, "GOMEMLIMIT="); ok {
			u.goMemLimit = quantity(t, "systemd GOMEMLIMIT", v)
		}
	}
	if m := unit["Service.MemoryMax"]; len(m) == 1 {
		u.max = quantity(t, "systemd MemoryMax", m[0])
	}
	all = append(all, u)

	for _, s := range all {
		c := sketch.DefaultConfig()
		if s.maxTables > 0 {
			c.MaxTables = s.maxTables
		}
		budget := int64(c.MemoryBudget())
		if s.goMemLimit == 0 || s.max == 0 {
			t.Errorf("%s: GOMEMLIMIT %d and a memory limit %d must both be set", s.where, s.goMemLimit, s.max)
			continue
		}
		if s.goMemLimit < budget+budget/4 {
			t.Errorf("%s: GOMEMLIMIT %d MiB is under 1.25 × the memory budget of %d tables, %d MiB", s.where, s.goMemLimit>>20, c.MaxTables, budget>>20)
		}
		if s.max < s.goMemLimit+s.goMemLimit/10 {
			t.Errorf("%s: memory limit %d MiB is under 1.1 × GOMEMLIMIT %d MiB", s.where, s.max>>20, s.goMemLimit>>20)
		}
	}
}

// quantity parses a memory size as Kubernetes, systemd and GOMEMLIMIT
// write it: a number and a binary suffix (Ki, Mi, Gi, KiB, MiB, GiB, or
// systemd's K, M, G, which are binary too).
func quantity(t *testing.T, what, s string) int64 {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)(|K|M|G|Ki|Mi|Gi|KiB|MiB|GiB)$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s: %q is not a memory size", what, s)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	switch strings.TrimSuffix(strings.TrimSuffix(m[2], "B"), "i") {
	case "K":
		n <<= 10
	case "M":
		n <<= 20
	case "G":
		n <<= 30
	}
	return n
}
