import { useState } from "preact/hooks";
import { ApiError, post, seg } from "../api/client.ts";
import type { Approval, ApprovalAnswer, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";
import { Countdown, useSecondsLeft } from "./countdown.tsx";

/** What an option means, read from its own words: allowing is the primary action, refusing the danger one. */
export function meaning(option: string): "allow" | "deny" | "other" {
	const word = option.trim().toLowerCase();
	if (/^(allow|yes|approve|accept|ok|okay|continue|proceed|run|confirm)\b/.test(word)) return "allow";
	if (/^(block|deny|no|reject|refuse|decline|cancel|abort|stop|never)\b/.test(word)) return "deny";
	return "other";
}
const styleOf = { allow: "primary", deny: "danger-solid", other: "" } as const;

/**
 * One approval, drawn by its method: confirm as two buttons, select as one button per option with
 * the option's own text, input/editor as a text field. Every string of it is the agent's: text only.
 * Options are styled by meaning (allow primary, block/deny danger) and none is focused for the
 * person: a stray Enter answers nothing. The title's first line is the question; the rest (the
 * permission gate's command) is shown as it is, in monospace.
 */
export function Dialog(props: { approval: Approval; me: Whoami; onDone: () => void; sessionName?: string }) {
	const { approval, me, onDone } = props;
	const [state, setState] = useState<{ busy?: boolean; result?: Approval; error?: string }>({});
	const [remember, setRemember] = useState(false);
	const [text, setText] = useState(approval.prefill ?? "");
	const seconds = useSecondsLeft(approval.expiresAt);
	const shown = state.result ?? approval;
	const open = shown.status === "pending" && seconds !== 0;
	const mayAnswer = can(me, "approvals:answer") && open;
	const answer = async (body: ApprovalAnswer) => {
		setState({ busy: true });
		try {
			const result = await post<Approval>(
				`/v1/sessions/${seg(approval.sessionId)}/approvals/${seg(approval.id)}`,
				body,
			);
			setState({ result });
			onDone();
		} catch (e) {
			const gone = e instanceof ApiError && (e.status === 409 || e.status === 410);
			setState({ error: gone ? `Already settled: ${e.message}` : (e as Error).message });
			if (gone) onDone();
		}
	};
	const withRemember = <T extends object>(body: T) => (remember ? { ...body, remember: "session" as const } : body);
	const titleId = `approval-${approval.id}`;
	const [question = "", ...rest] = shown.title.split("\n");
	const detail = dedent(rest).trim() ? dedent(rest) : undefined;
	return (
		<section class="dialog card" aria-labelledby={detail ? `${titleId} ${titleId}-detail` : titleId}>
			<p class="meta on-session">
				Session <code>{props.sessionName ?? approval.sessionId}</code>
			</p>
			<h3 id={titleId} class="pre">
				{question}
			</h3>
			{detail && (
				<pre id={`${titleId}-detail`} class="cmd">
					{detail}
				</pre>
			)}
			{shown.message && <pre class="message">{shown.message}</pre>}
			<p class="meta">
				<StatusBadge approval={shown} expired={seconds === 0} /> <Countdown seconds={open ? seconds : undefined} />
			</p>
			{mayAnswer && (
				<div class="answer">
					{approval.method === "select" && (
						<fieldset>
							<legend>Choose</legend>
							{(approval.options ?? []).map((option) => (
								<button
									type="button"
									key={option}
									class={styleOf[meaning(option)]}
									disabled={state.busy}
									onClick={() => answer(withRemember({ value: option }))}
								>
									{option}
								</button>
							))}
						</fieldset>
					)}
					{approval.method === "confirm" && (
						<div class="row">
							<button
								type="button"
								class="primary"
								disabled={state.busy}
								onClick={() => answer(withRemember({ confirmed: true }))}
							>
								Yes
							</button>
							<button
								type="button"
								class="danger-solid"
								disabled={state.busy}
								onClick={() => answer(withRemember({ confirmed: false }))}
							>
								No
							</button>
						</div>
					)}
					{(approval.method === "input" || approval.method === "editor") && (
						<form
							onSubmit={(e) => {
								e.preventDefault();
								void answer(withRemember({ value: text }));
							}}
						>
							<label for={`${titleId}-text`}>Answer</label>
							{approval.method === "editor" ? (
								<textarea
									id={`${titleId}-text`}
									rows={6}
									value={text}
									onInput={(e) => setText(e.currentTarget.value)}
								/>
							) : (
								<input
									id={`${titleId}-text`}
									value={text}
									placeholder={approval.placeholder}
									onInput={(e) => setText(e.currentTarget.value)}
								/>
							)}
							<button type="submit" class="primary" disabled={state.busy}>
								Submit
							</button>
						</form>
					)}
					<div class="row">
						{approval.method !== "input" && approval.method !== "editor" ? (
							<label class="check">
								<input type="checkbox" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} />
								Remember for this session
							</label>
						) : null}
						<button type="button" class="quiet" disabled={state.busy} onClick={() => answer({ cancelled: true })}>
							Dismiss
						</button>
					</div>
				</div>
			)}
			{state.error && (
				<p role="alert" class="error">
					{state.error}
				</p>
			)}
		</section>
	);
}

function StatusBadge({ approval, expired }: { approval: Approval; expired: boolean }) {
	if (approval.status === "pending" && !expired) return <span class="badge warn">Waiting for an answer</span>;
	if (approval.status === "answered") {
		const a = approval.answer as { value?: string; confirmed?: boolean } | null;
		const what = a?.value ?? (a?.confirmed === undefined ? "" : a.confirmed ? "Yes" : "No");
		return (
			<span class="badge ok" role="status">
				Answered: {what} by {approval.resolvedBy ?? "someone"}
			</span>
		);
	}
	return (
		<span class="badge bad" role="status">
			{expired ? "Expired" : approval.status}
		</span>
	);
}

/** The lines after the question without their common indent (the gate indents its command). */
function dedent(lines: string[]): string {
	const body = lines.join("\n").replace(/^\n+|\n+$/g, "");
	const indent = Math.min(
		...body
			.split("\n")
			.filter((l) => l.trim())
			.map((l) => /^ */.exec(l)?.[0].length ?? 0),
	);
	return Number.isFinite(indent) && indent > 0
		? body
				.split("\n")
				.map((l) => l.slice(indent))
				.join("\n")
		: body;
}
