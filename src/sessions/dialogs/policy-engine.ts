import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { parse as parseYaml } from "yaml";
import { eventJson, type LoggedEvent } from "../events/event-log.ts";
import type { ApprovalAnswer, Approvals } from "./approvals.ts";
import { answerFor, decide, type PolicyRule, PolicySet } from "./policies.ts";

/** What the engine needs of a session (a Session is one): its id and its approvals. */
export interface PolicySession {
	readonly id: string;
	readonly approvals: Approvals;
}

/** What the engine needs of the registry: the event hub, a session, and the policies it was created with. */
export interface PolicyHost {
	subscribeAll(listener: (sessionId: string, event: LoggedEvent) => void): () => void;
	list(): PolicySession[];
	policiesOf(sessionId: string): PolicySet | undefined;
}

/** "Allow always" rules a person added, per session at most this many (the oldest go). */
const maxRemembered = 100;

/**
 * --approval-policies-file: JSON or YAML of an ApprovalPolicies object, held to the same rules as a
 * session's (RE2 patterns, their size). A refused rule stops the start, naming the file and the rule.
 */
export function loadPolicyFile(path: string): PolicySet {
	const text = readFileSync(path, "utf8");
	const data = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
	const parsed = PolicySet.safeParse(data);
	if (parsed.success) return parsed.data;
	const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`);
	throw new Error(`--approval-policies-file ${path}: ${issues.join("; ")}`);
}

/**
 * Answers dialogs by rule, right after they open, and settles the ones nobody answered in time.
 * Every automatic answer goes through Approvals.answer, so it is an ordinary resolved approval
 * (event stream, history, webhooks) with `resolvedBy: policy:<rule>`.
 */
/** Where remembered rules also go so that other nodes know them (cluster mode: PostgreSQL). */
export interface RulesMirror {
	saveRules(sessionId: string, rules: string): void;
}

/**
 * Where the node keeps each session's remembered rules (src/store/sqlite/session-rules.ts:
 * gateway.db), handed over by server.ts. Once the database closed it reads none and writes nothing.
 */
export interface RulesStore {
	rules(sessionId: string): PolicyRule[];
	save(sessionId: string, rules: PolicyRule[]): void;
}

export class PolicyEngine {
	readonly #gateway: PolicySet;
	readonly #host: PolicyHost;
	readonly #store: RulesStore;
	readonly #logger: Logger;
	readonly #timers = new Map<string, NodeJS.Timeout>();
	#unsubscribe: (() => void) | undefined;

	readonly #mirror: RulesMirror | undefined;

	/** `mirror`: cluster mode, where remembered rules also go so that the session's next node has them. */
	constructor(gateway: PolicySet, host: PolicyHost, store: RulesStore, logger: Logger, mirror?: RulesMirror) {
		this.#mirror = mirror;
		this.#gateway = gateway;
		this.#host = host;
		this.#store = store;
		this.#logger = logger;
	}

	start(): void {
		this.#unsubscribe = this.#host.subscribeAll((sessionId, event) => {
			if (event.type === "approval_requested") {
				const { approval } = eventJson<{ approval: { id: string } }>(event);
				// After the opening has finished (status, pause of the deadline): answering inside it would re-enter.
				queueMicrotask(() => this.#apply(sessionId, approval.id));
			} else if (event.type === "approval_resolved") {
				const { approval } = eventJson<{ approval: { id: string } }>(event);
				this.#clear(`${sessionId}/${approval.id}`);
			}
		});
	}

	stop(): void {
		this.#unsubscribe?.();
		for (const timer of this.#timers.values()) clearTimeout(timer);
		this.#timers.clear();
	}

	/**
	 * The operator's rules first, so that an operator's `ask` or `deny` holds whatever a session
	 * brings; then what a person chose to remember for the session; then the session's own rules.
	 */
	rules(sessionId: string): PolicyRule[] {
		return [...this.#gateway.rules, ...this.#remembered(sessionId), ...(this.#host.policiesOf(sessionId)?.rules ?? [])];
	}

	/** "Allow always for this session": the answer becomes a rule for dialogs with the same method and title. */
	remember(session: PolicySession, approvalId: string, answer: ApprovalAnswer): void {
		const approval = session.approvals.get(approvalId);
		const action: PolicyRule["action"] | undefined =
			"confirmed" in answer
				? answer.confirmed
					? "allow"
					: "deny"
				: "value" in answer
					? { value: answer.value }
					: undefined;
		if (!action) return;
		const rules = this.#remembered(session.id);
		const rule: PolicyRule = {
			name: `remembered-${approval.id.slice(0, 8)}`,
			match: { method: [approval.method], titleEquals: approval.title },
			action,
		};
		const next = [rule, ...rules.filter((r) => r.match.titleEquals !== approval.title)].slice(0, maxRemembered);
		this.preload(session.id, next);
		this.#mirror?.saveRules(session.id, JSON.stringify(next));
	}

	/** Remembered rules of a session (cluster mode: written by the node that ran it before). */
	preload(sessionId: string, rules: PolicyRule[]): void {
		this.#store.save(sessionId, rules);
	}

	#remembered(sessionId: string): PolicyRule[] {
		return this.#store.rules(sessionId);
	}

	#apply(sessionId: string, approvalId: string): void {
		const session = this.#host.list().find((s) => s.id === sessionId);
		if (!session) return;
		try {
			const approval = session.approvals.get(approvalId);
			if (approval.status !== "pending") return;
			const decision = decide(this.rules(sessionId), approval);
			if (decision) {
				session.approvals.answer(approvalId, { ...decision.answer, by: `policy:${decision.rule.name}` });
				return;
			}
			const unanswered = this.#host.policiesOf(sessionId)?.unanswered ?? this.#gateway.unanswered;
			if (!unanswered || unanswered.action === "wait") return;
			const key = `${sessionId}/${approvalId}`;
			const timer = setTimeout(() => {
				this.#timers.delete(key);
				if (approval.status !== "pending") return;
				const answer = unanswered.action === "deny" ? answerFor("deny", approval) : { cancelled: true as const };
				if (answer && answer !== "ask") session.approvals.answer(approvalId, { ...answer, by: "policy:unanswered" });
			}, unanswered.afterMs);
			timer.unref();
			this.#timers.set(key, timer);
		} catch (error) {
			this.#logger.warn({ err: error, sessionId, approvalId }, "approval policy not applied");
		}
	}

	#clear(key: string): void {
		clearTimeout(this.#timers.get(key));
		this.#timers.delete(key);
	}
}
