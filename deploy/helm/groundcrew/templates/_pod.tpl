{{- define "groundcrew.pod" }}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations:
        checksum/config: {{ .Values.config | sha256sum }}
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: groundcrew
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args: ["serve", "--config", "/etc/groundcrew/groundcrew.yaml"]
          ports: [{name: http, containerPort: 8080}]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          # /readyz: store open, chat connected, config loaded (a Concourse
          # target down does not make the bot unready); with PostgreSQL, 503
          # on a standby, so the Service sends chat and alert HTTP to the leader.
          readinessProbe: {httpGet: {path: /readyz, port: http}}
          livenessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 30}
          resources: {{ toYaml .Values.resources | nindent 12 }}
          {{- if .Values.store.postgres.enabled }}
          env:
            - name: GROUNDCREW_STORE_DSN
              valueFrom: {secretKeyRef: {name: {{ .Values.existingSecret }}, key: {{ .Values.store.postgres.dsnSecretKey }}}}
          {{- end }}
          volumeMounts:
            - {name: config, mountPath: /etc/groundcrew}
            - {name: secrets, mountPath: /run/secrets, readOnly: true}
            {{- if not .Values.store.postgres.enabled }}
            - {name: data, mountPath: /var/lib/groundcrew}
            {{- end }}
      volumes:
        - name: config
          configMap: {name: {{ .Release.Name }}-config}
        - name: secrets
          secret: {secretName: {{ .Values.existingSecret }}}
{{- end }}

{{- define "groundcrew.replicas" -}}
{{- if .Values.store.postgres.enabled -}}
{{- .Values.replicaCount | default 2 -}}
{{- else -}}
{{- if gt (int (.Values.replicaCount | default 1)) 1 -}}
{{- fail "replicaCount > 1 needs store.postgres.enabled: the bbolt store is a single-writer file (see the README, \"Running highly available\")" -}}
{{- end -}}
1
{{- end -}}
{{- end -}}
