import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, get, post, seg } from "../api/client.ts";
import type { ToolCall, Whoami } from "../api/types.ts";
import { can } from "../auth/scopes.ts";

/**
 * The arguments against the tool's declared parameters: pi checked them too, this shows it to the
 * person. The validator is fetched the first time a tool call is shown (a chunk of its own, out of
 * the first load).
 */
export async function checkArguments(call: Pick<ToolCall, "arguments" | "parameters">): Promise<string[] | undefined> {
	if (!call.parameters) return undefined;
	try {
		const { schemaProblems } = await import("./schema-check.ts");
		return schemaProblems(call.parameters, call.arguments ?? {});
	} catch (e) {
		return [`the parameters could not be read: ${(e as Error).message}`];
	}
}

/** Text that looks like JSON must be JSON: the answer is sent as it is typed, so a typo reaches the model. */
function jsonProblem(text: string): string | undefined {
	const t = text.trim();
	if (!/^[[{"]/.test(t)) return undefined;
	try {
		JSON.parse(t);
		return undefined;
	} catch (e) {
		return `Not valid JSON: ${(e as Error).message}`;
	}
}

/**
 * A call of the calling program's own tool that waits for its answer (docs/client-tools.md): the
 * person can answer in the program's place, with the tool's output or an error. Its name and
 * arguments are the model's: text only.
 */
export function ToolCallCard(props: { call: ToolCall; me: Whoami; onDone: () => void; sessionName?: string }) {
	const { call, me, onDone } = props;
	const [text, setText] = useState("");
	const [state, setState] = useState<{ busy?: boolean; result?: ToolCall; error?: string }>({});
	const [problems, setProblems] = useState<string[]>();
	useEffect(() => {
		checkArguments(call).then(setProblems, () => setProblems(undefined));
	}, [call.id, call.parameters]);
	const shown = state.result ?? call;
	const open = shown.status === "pending";
	const mayAnswer = can(me, "sessions:write") && open;
	const invalid = jsonProblem(text);
	const titleId = `tool-call-${call.id}`;
	const answer = async (isError: boolean) => {
		setState({ busy: true });
		try {
			const output = text.trim() || (isError ? `Refused by ${me.principal} in the console` : "");
			const result = await post<ToolCall>(`/v1/sessions/${seg(call.sessionId)}/tool-calls/${seg(call.id)}`, {
				output,
				isError,
			});
			setState({ result });
			onDone();
		} catch (e) {
			const gone = e instanceof ApiError && (e.status === 409 || e.status === 410);
			setState({ error: gone ? `Already settled: ${e.message}` : (e as Error).message });
			if (gone) onDone();
		}
	};
	return (
		<section class="dialog card tool-call" aria-labelledby={titleId}>
			<p class="meta on-session">
				Session <code>{props.sessionName ?? call.sessionId}</code>
			</p>
			<h2 id={titleId} class="h3">
				Your program's tool <code>{call.name}</code> waits for an answer
			</h2>
			<p class="label">Arguments</p>
			<pre class="cmd">{JSON.stringify(call.arguments ?? {}, null, 2)}</pre>
			{problems !== undefined && (
				<p class={problems.length === 0 ? "meta check ok" : "meta check bad"}>
					{problems.length === 0
						? "✓ The arguments match the tool's parameters."
						: `✗ The arguments do not match the tool's parameters: ${problems.join("; ")}`}
				</p>
			)}
			{call.parameters && (
				<details class="args">
					<summary>The tool's parameters</summary>
					<pre>{JSON.stringify(call.parameters, null, 2)}</pre>
				</details>
			)}
			{!open && (
				<p class="meta">
					<span
						class={`badge ${shown.result?.isError ? "bad" : shown.status === "answered" ? "ok" : "muted"}`}
						role="status"
					>
						{shown.status === "answered"
							? `${shown.result?.isError ? "Answered with an error" : "Answered"} by ${shown.resolvedBy ?? "someone"}`
							: `${shown.status}${shown.resolvedBy ? ` (${shown.resolvedBy})` : ""}`}
					</span>
				</p>
			)}
			{mayAnswer && (
				<form
					class="answer"
					onSubmit={(e) => {
						e.preventDefault();
						if (!invalid) void answer(false);
					}}
				>
					<label for={`${titleId}-answer`}>Answer</label>
					<textarea
						id={`${titleId}-answer`}
						rows={3}
						value={text}
						placeholder="What the tool returns to the model: text, or JSON"
						aria-invalid={invalid ? true : undefined}
						aria-describedby={invalid ? `${titleId}-invalid` : undefined}
						onInput={(e) => setText(e.currentTarget.value)}
					/>
					{invalid && (
						<p id={`${titleId}-invalid`} class="error">
							{invalid}
						</p>
					)}
					<div class="row">
						<button type="submit" class="primary" disabled={state.busy || Boolean(invalid)}>
							Send answer
						</button>
						<button type="button" class="danger" disabled={state.busy} onClick={() => answer(true)}>
							Send as an error
						</button>
					</div>
				</form>
			)}
			{state.error && (
				<p role="alert" class="error">
					{state.error}
				</p>
			)}
		</section>
	);
}

/** Tool calls that left the pending list while on screen, kept with their outcome (read back from the API). */
export function useSettledCalls(current: ToolCall[]): ToolCall[] {
	const seen = useRef(new Map<string, ToolCall>());
	const [settled, setSettled] = useState<ToolCall[]>([]);
	useEffect(() => {
		const ids = new Set(current.map((c) => c.id));
		for (const gone of seen.current.values()) {
			if (ids.has(gone.id)) continue;
			get<ToolCall>(`/v1/sessions/${seg(gone.sessionId)}/tool-calls/${seg(gone.id)}`)
				.then((c) => setSettled((s) => [c, ...s.filter((x) => x.id !== c.id)].slice(0, 20)))
				.catch(() => {});
		}
		seen.current = new Map(current.map((c) => [c.id, c]));
	}, [current]);
	return settled.filter((c) => !current.some((x) => x.id === c.id));
}
