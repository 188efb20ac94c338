import type { Config } from "./config.ts";

/** Settings of the config schema whose value is a number: the only ones a limit list may name. */
type NumericSetting = { [K in keyof Config]-?: Config[K] extends number ? K : never }[keyof Config] & keyof Config;

/**
 * The one list of per-session limits: a Session gets exactly these (SessionLimits), and
 * /v1/info shows them. Typed against ConfigSchema, so a renamed or removed setting is a compile
 * error here instead of a third copy that silently drifts.
 */
export const sessionLimitKeys = [
	"maxQueued",
	"commandTimeoutMs",
	"startupTimeoutMs",
	"shutdownGraceMs",
	"eventLogMaxEvents",
	"eventLogMaxBytes",
	"maxLineChars",
	"stderrTailBytes",
	"approvalTimeoutMs",
	"maxPendingDialogs",
	"maxNotifications",
] as const satisfies readonly NumericSetting[];

/** Limits of the gateway as a whole (sessions, connections, streams), also shown by /v1/info. */
export const gatewayLimitKeys = [
	"maxSessions",
	"maxLiveSessions",
	"idleTimeoutMs",
	"ephemeralIdleTimeoutMs",
	"warmPool",
	"maxImageBytes",
	"streamTicketTtlMs",
	"maxSubscribers",
	"maxEventStreams",
	"maxBodyBytes",
	"waitTimeoutMs",
	"sseMaxBufferedBytes",
	"sseHeartbeatMs",
] as const satisfies readonly NumericSetting[];

export type SessionLimits = Pick<Config, (typeof sessionLimitKeys)[number]>;

/** Every limit /v1/info reports: the gateway's, then a session's. */
export const infoLimitKeys = [...gatewayLimitKeys, ...sessionLimitKeys] as const;

/** The named settings, copied out of the config. */
export function pickLimits<K extends NumericSetting>(config: Config, keys: readonly K[]): Pick<Config, K> {
	return Object.fromEntries(keys.map((key) => [key, config[key]])) as Pick<Config, K>;
}
