import { Resolver } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";

/**
 * How one sandbox's egress proxy resolves a name: with c-ares (node:dns Resolver), never with
 * `dns.lookup`, which runs getaddrinfo on libuv's thread pool. That pool has 4 threads for the whole
 * gateway (files, the relay's own connects, every principal's work): an attacker's review sent 60
 * lookups through one sandbox's proxy to a DNS server that never answered, and another principal's
 * prompt took 287 s. Here a query gives up after `lookupTimeoutMs` (tried `lookupTries` times), at
 * most `lookups` of one session run at once (the rest wait their turn, bounded by the proxy's
 * connections), `localhost` and literal addresses need no DNS, and /etc/hosts is read once, when
 * the proxy opens, as getaddrinfo would read it. Names are looked up as written: no search domains.
 */
export const lookupLimits = {
	/** A session's lookups at once. */
	lookups: 4,
	/** One query's wait for an answer, per try. */
	lookupTimeoutMs: 2_000,
	lookupTries: 2,
};

/** /etc/hosts as name → addresses (names in lower case). */
function hostsFile(path = "/etc/hosts"): Map<string, string[]> {
	const hosts = new Map<string, string[]>();
	let text = "";
	try {
		text = readFileSync(path, "utf8");
	} catch {
		return hosts;
	}
	for (const line of text.split("\n")) {
		const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
		if (!address || !isIP(address)) continue;
		for (const name of names) {
			const key = name.toLowerCase().replace(/\.$/, "");
			hosts.set(key, [...(hosts.get(key) ?? []), address]);
		}
	}
	return hosts;
}

export class EgressLookups {
	readonly #resolver = new Resolver({
		timeout: lookupLimits.lookupTimeoutMs,
		tries: lookupLimits.lookupTries,
		maxTimeout: lookupLimits.lookupTimeoutMs,
	});
	readonly #hosts = hostsFile();
	#active = 0;
	#closed = false;
	readonly #waiting: (() => void)[] = [];

	/** `servers`: DNS servers of its own (a test's), else /etc/resolv.conf's. */
	constructor(servers?: string[]) {
		if (servers) this.#resolver.setServers(servers);
	}

	/**
	 * The addresses of `host` (a name in lower case, or an address), IPv4 first; throws when it has
	 * none. `left`: the client went, so a lookup still waiting for its turn is dropped.
	 */
	async addresses(host: string, left?: AbortSignal): Promise<string[]> {
		if (isIP(host)) return [host];
		const listed = this.#hosts.get(host);
		if (listed) return listed;
		if (host === "localhost" || host.endsWith(".localhost")) return ["127.0.0.1", "::1"];
		// A slot, or a wait for one handed over as a lookup ends.
		if (this.#active < lookupLimits.lookups) this.#active++;
		else await this.#turn(left);
		try {
			if (this.#closed) throw new Error("the proxy closed");
			const [v4, v6] = await Promise.allSettled([this.#resolver.resolve4(host), this.#resolver.resolve6(host)]);
			const found = [v4, v6].flatMap((answer) => (answer.status === "fulfilled" ? answer.value : []));
			if (found.length > 0) return found;
			const why = v4.status === "rejected" ? (v4.reason as NodeJS.ErrnoException).code : undefined;
			throw new Error(`${host} does not resolve${why ? ` (${why})` : ""}`);
		} finally {
			const next = this.#waiting.shift();
			if (next) next();
			else this.#active--;
		}
	}

	#turn(left: AbortSignal | undefined): Promise<void> {
		return new Promise((turn, fail) => {
			const gone = () => {
				const at = this.#waiting.indexOf(mine);
				if (at !== -1) this.#waiting.splice(at, 1);
				fail(new Error("the client left"));
			};
			const mine = () => {
				left?.removeEventListener("abort", gone);
				turn();
			};
			if (left?.aborted) return gone();
			left?.addEventListener("abort", gone, { once: true });
			this.#waiting.push(mine);
		});
	}

	/** Ends the lookups in flight (the proxy closed). */
	close(): void {
		this.#closed = true;
		this.#resolver.cancel();
	}
}
