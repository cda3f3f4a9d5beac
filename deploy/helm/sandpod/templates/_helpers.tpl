{{- define "sandpod.labels" -}}
app.kubernetes.io/name: sandpod
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "sandpod.selector" -}}
app.kubernetes.io/name: sandpod
app.kubernetes.io/component: controller
{{- end -}}
{{- define "sandpod.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
