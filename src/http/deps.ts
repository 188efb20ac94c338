import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { SessionRegistry } from "../sessions/registry.ts";

/** What every route factory gets: built once in createApp, no globals. */
export interface Deps {
	config: Config;
	registry: SessionRegistry;
	logger: Logger;
}
