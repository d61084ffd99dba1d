"""What the library reports about itself while it runs: OpenTelemetry spans (tracing.py). The service's
metrics and request spans are faces of the server (server/metrics.py, server/trace_requests.py)."""
