import { useEffect, useState } from "preact/hooks";
import { get } from "./api/client.ts";
import type { Info } from "./api/types.ts";

/**
 * Whether the gateway's agents run confined, said on every screen when they do not: an unavailable
 * sandbox means no session can start (the gateway fails closed and says how to fix it), and
 * `--sandbox off` means the operator chose to run tools as the gateway's user.
 */
export function SandboxBanner() {
	const [sandbox, setSandbox] = useState<Info["sandbox"]>();
	useEffect(() => {
		get<Info>("/v1/info")
			.then((info) => setSandbox(info.sandbox))
			.catch(() => {});
	}, []);
	if (sandbox?.state === "unavailable")
		return (
			<p class="banner bad" role="alert">
				<strong>No session can start:</strong> the sandbox is unavailable ({sandbox.reason}). The operator must{" "}
				{sandbox.fix}.
			</p>
		);
	if (sandbox?.state === "unconfined")
		return (
			<p class="banner warn" role="status">
				<strong>Sandbox off:</strong> agents' tools run unconfined as the gateway's user (the operator started it with
				--sandbox off).
			</p>
		);
	return null;
}
