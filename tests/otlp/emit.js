// Emits GenAI spans with the OpenTelemetry SDK for Node and its OTLP/HTTP
// exporter (JSON or protobuf), as an instrumented agent framework would,
// to ledgerd's --otlp-listen; then exports the same spans a second time
// (a resend). Prints one JSON line: the spans' ids, each export's result
// and the exporter's warnings (where it reports partial success).
//
// Usage: node emit.js CONFIG_JSON
//   {"url", "protocol": "json"|"proto", "compression": "none"|"gzip",
//    "ca", "cert", "key", "run_id", "prompt", "completion", "tool_args",
//    "spans": [{"name", "attributes"}]}
'use strict';

const fs = require('fs');
const { diag, DiagLogLevel, trace } = require('@opentelemetry/api');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');

const config = JSON.parse(process.argv[2]);
const { OTLPTraceExporter } =
  config.protocol === 'proto'
    ? require('@opentelemetry/exporter-trace-otlp-proto')
    : require('@opentelemetry/exporter-trace-otlp-http');

const warnings = [];
diag.setLogger(
  {
    error: (...a) => warnings.push(a.join(' ')),
    warn: (...a) => warnings.push(a.join(' ')),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  },
  DiagLogLevel.WARN,
);

const exporter = new OTLPTraceExporter({
  url: config.url,
  compression: config.compression,
  timeoutMillis: 20000,
  httpAgentOptions: config.ca
    ? { ca: fs.readFileSync(config.ca), cert: fs.readFileSync(config.cert), key: fs.readFileSync(config.key) }
    : {},
});

// Records what each export returned and the spans it carried.
const results = [];
const sent = [];
const recording = {
  export(spans, done) {
    sent.push(...spans);
    exporter.export(spans, (result) => {
      results.push({ code: result.code, error: result.error ? String(result.error.message) : '' });
      done(result);
    });
  },
  shutdown: () => exporter.shutdown(),
  forceFlush: () => exporter.forceFlush(),
};

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({
    'service.name': 'agent',
    'ledger.team': 'team-a',
    'ledger.run_id': config.run_id,
  }),
  spanProcessors: [new BatchSpanProcessor(recording, { maxExportBatchSize: 512, scheduledDelayMillis: 60000 })],
});
const tracer = provider.getTracer('otlp-test');

async function main() {
  for (const s of config.spans) {
    const span = tracer.startSpan(s.name, { attributes: s.attributes });
    await new Promise((r) => setTimeout(r, 5));
    span.end();
  }
  await provider.forceFlush();
  // The same spans again, as an exporter's retry sends them.
  await new Promise((resolve) =>
    exporter.export(sent.slice(), (result) => {
      results.push({ code: result.code, error: result.error ? String(result.error.message) : '' });
      resolve();
    }),
  );
  const ns = (t) => (BigInt(t[0]) * 1000000000n + BigInt(t[1])).toString();
  const ids = sent.map((s) => ({
    name: s.name,
    trace_id: s.spanContext().traceId,
    span_id: s.spanContext().spanId,
    start_ns: ns(s.startTime),
    end_ns: ns(s.endTime),
  }));
  await provider.shutdown();
  process.stdout.write(JSON.stringify({ spans: ids, exports: results, warnings }) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack) + '\n');
  process.exit(1);
});
