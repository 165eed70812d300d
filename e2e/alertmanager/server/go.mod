module github.com/groundcrew/groundcrew/e2e/alertmanager/server

go 1.26.0

require github.com/prometheus/alertmanager v0.31.1 // indirect
