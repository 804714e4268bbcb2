{{/* Names. */}}
{{- define "eventlogging.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eventlogging.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of a role's objects; call with (dict "ctx" $ "role" "intake"). */}}
{{- define "eventlogging.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: eventlogging
app.kubernetes.io/version: {{ .ctx.Values.image.tag | default .ctx.Chart.AppVersion | quote }}
{{ include "eventlogging.selectorLabels" . }}
{{- end }}

{{- define "eventlogging.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eventlogging.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "eventlogging.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- end }}

{{/*
The configuration file: .Values.config, with registry.url pointing at the
chart's registry when it is enabled and no URL is set, and
process.streams_file when streams are given.
*/}}
{{- define "eventlogging.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- if and .Values.registry.enabled (not (dig "registry" "url" "" $cfg)) }}
{{- $reg := get $cfg "registry" | default dict }}
{{- $_ := set $reg "url" (printf "http://%s-registry:%d" (include "eventlogging.fullname" .) (int .Values.registry.service.port)) }}
{{- $_ := set $cfg "registry" $reg }}
{{- end }}
{{- if .Values.streams }}
{{- $proc := get $cfg "process" | default dict }}
{{- $_ := set $proc "streams_file" "/etc/eventlogging/streams.yaml" }}
{{- $_ := set $cfg "process" $proc }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* Pod annotations: config checksum (a change rolls the pods) and scraping. */}}
{{- define "eventlogging.podAnnotations" -}}
checksum/config: {{ include "eventlogging.config" .ctx | sha256sum }}
{{- if .ctx.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Environment of every container: the Go memory limit and the pod's names. */}}
{{- define "eventlogging.env" -}}
- name: GOMEMLIMIT
  value: {{ .gomemlimit | quote }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}

{{/* The Secret of environment variables, when given. */}}
{{- define "eventlogging.envFrom" -}}
{{- if .Values.secrets.existingSecret -}}
envFrom:
  - secretRef:
      name: {{ .Values.secrets.existingSecret }}
{{- end }}
{{- end }}

{{/* Volumes every pod has: the configuration, /tmp, the Kafka TLS files. */}}
{{- define "eventlogging.volumes" -}}
- name: config
  configMap:
    name: {{ include "eventlogging.fullname" . }}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- if .Values.kafkaTLS.secretName }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafkaTLS.secretName }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "eventlogging.volumeMounts" -}}
- name: config
  mountPath: /etc/eventlogging
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if .Values.kafkaTLS.secretName }}
- name: kafka-tls
  mountPath: /etc/eventlogging-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* HTTP probes on one port: call with (dict "port" "http" "live" "/healthz" "ready" "/readyz"). */}}
{{- define "eventlogging.probes" -}}
startupProbe:
  httpGet:
    path: {{ .live }}
    port: {{ .port }}
  periodSeconds: 5
  failureThreshold: 60
livenessProbe:
  httpGet:
    path: {{ .live }}
    port: {{ .port }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: {{ .ready }}
    port: {{ .port }}
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
{{- end }}
