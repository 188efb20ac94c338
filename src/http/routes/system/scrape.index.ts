import type { Metrics } from "../../observability/prometheus.ts";
import { createRouter } from "../../transport/openapi.ts";
import { metrics as metricsRoute } from "./system.routes.ts";

export function metricsRouter(metrics: Metrics) {
	return createRouter().openapi(metricsRoute, async (c) =>
		c.text(await metrics.text(), 200, { "Content-Type": metrics.contentType }),
	);
}
