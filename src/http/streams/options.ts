import type { Config } from "../../config/config.ts";
import type { SseOptions } from "./sse.ts";

/** One heartbeat interval is also how long a dropped reader's socket gets to take its last frame. */
export function sseOptions(config: Config): SseOptions {
	return {
		heartbeatMs: config.sseHeartbeatMs,
		maxBufferedBytes: config.sseMaxBufferedBytes,
		dropGraceMs: config.sseHeartbeatMs,
	};
}
