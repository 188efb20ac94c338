import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { PolicyEngine } from "../sessions/policy-engine.ts";
import type { SessionRegistry } from "../sessions/registry.ts";

/** What every route factory gets: built once in createApp, no globals. */
export interface Deps {
	config: Config;
	registry: SessionRegistry;
	logger: Logger;
	/** Approval policies (absent in an app built without the store). */
	policies?: PolicyEngine;
}
