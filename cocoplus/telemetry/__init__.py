"""The timeline sent as OpenTelemetry traces: `settings` (where to, from `[telemetry]` and the standard
`OTEL_EXPORTER_OTLP_*` variables), `status` (which process exports and how its last export went: the file
`doctor`, `top` and the page read) and `export` (the OTLP exporter, the only module that imports the SDK)."""
