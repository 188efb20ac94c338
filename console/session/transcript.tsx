import { useEffect, useRef } from "preact/hooks";
import { Markdown } from "../markdown/markdown.tsx";
import type { Item, Transcript } from "./reducer.ts";

/** The transcript as derived by the reducer; a log for screen readers, newest at the end. */
export function TranscriptView({ transcript }: { transcript: Transcript }) {
	const end = useRef<HTMLDivElement>(null);
	const count = transcript.items.length;
	useEffect(() => {
		end.current?.scrollIntoView({ block: "nearest" });
	}, [count, transcript.lastSeq]);
	return (
		<section class="transcript" role="log" aria-label="Transcript">
			{transcript.lost > 0 && <p class="muted">{transcript.lost} earlier events are no longer in the gateway's log.</p>}
			{count === 0 && <p class="muted">Nothing said yet.</p>}
			{transcript.items.map((item) => (
				<Entry key={item.id} item={item} />
			))}
			<div ref={end} />
		</section>
	);
}

function Entry({ item }: { item: Item }) {
	switch (item.kind) {
		case "user":
			return (
				<div class="msg user">
					<span class="who">You</span>
					<p class="pre">{item.text}</p>
				</div>
			);
		case "assistant":
			// A message that only called tools shows as its tool entries.
			if (!item.error && !item.blocks.some((b) => b.text)) return null;
			return (
				<div class="msg assistant" aria-busy={item.streaming}>
					<span class="who">Agent</span>
					{item.blocks.map((b, i) =>
						b.type === "thinking" ? (
							<details key={i} class="thinking">
								<summary>Thinking</summary>
								<p class="pre">{b.text}</p>
							</details>
						) : b.text ? (
							<Markdown key={i} text={b.text} />
						) : null,
					)}
					{item.error && <p class="error">{item.error}</p>}
				</div>
			);
		case "tool":
			return <Tool item={item} />;
		case "notice":
			return <p class={item.level === "error" ? "error" : "muted"}>{item.text}</p>;
	}
}

function Tool({ item }: { item: Extract<Item, { kind: "tool" }> }) {
	const command = item.name === "bash" ? String((item.args as { command?: unknown })?.command ?? "") : "";
	const state = item.status === "running" ? "running" : item.status === "error" ? "failed" : "done";
	return (
		<details class={`tool ${item.status}`} open={item.status === "running"}>
			<summary>
				{item.name === "bash" ? <code>$ {command}</code> : <code>{item.name}</code>}{" "}
				<span class="muted">({state})</span>
			</summary>
			{item.name !== "bash" && <pre>{JSON.stringify(item.args, null, 2)}</pre>}
			{item.output && <pre class="output">{item.output}</pre>}
		</details>
	);
}
