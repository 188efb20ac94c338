import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { Markdown } from "../markdown/markdown.tsx";
import type { Item, Transcript } from "./reducer.ts";

/** Output longer than this many lines is folded to its first lines until "Show all" is pressed. */
const foldLines = 8;
/** How close to the end (px) still counts as "reading the latest". */
const nearEnd = 96;

// The page itself scrolls (the composer is docked at its end), so "the latest" is the page's end.
const scroller = () => document.scrollingElement ?? document.documentElement;
const atEnd = () => {
	const root = scroller();
	return root.scrollHeight - root.scrollTop - root.clientHeight <= nearEnd;
};
/** Dispatched on the window when the person sends a message: the transcript follows again. */
export const followEvent = "pi-console-follow";
/** Where the page was last seen scrolled to, by a scroll event or by toEnd itself. */
let lastTop = 0;
const toEnd = () => {
	const root = scroller();
	root.scrollTop = root.scrollHeight;
	lastTop = root.scrollTop;
};

/**
 * The transcript as derived by the reducer: a conversation, newest at the end (a log for screen
 * readers). While it grows, a reader at the end is kept there; one who scrolled up is left where
 * they are and offered "Jump to latest" instead.
 */
export function TranscriptView({ transcript, empty }: { transcript: Transcript; empty?: string }) {
	const following = useRef(true);
	const [behind, setBehind] = useState(false);
	const count = transcript.items.length;
	useEffect(() => {
		// Only the reader moving up stops the following. A scroll event is dispatched a frame after
		// the scroll: the one toEnd caused can arrive once a dialog or entry has made the page taller,
		// when the page is no longer at its end though nobody moved it; judged by atEnd alone it
		// stopped the following, and the dock then covered the command it asks about.
		const onScroll = () => {
			const top = scroller().scrollTop;
			if (atEnd()) following.current = true;
			else if (top < lastTop) following.current = false;
			lastTop = top;
			if (following.current) setBehind(false);
		};
		// The person sent a message: they want to see it and what answers it (composer.tsx).
		const onSent = () => jump();
		lastTop = scroller().scrollTop;
		addEventListener("scroll", onScroll, { passive: true });
		addEventListener(followEvent, onSent);
		// The docked dialogs and composer grow and shrink (a dialog comes, an answer goes): a reader at
		// the end stays there, so the dock sits below the last entry instead of over it.
		const resized = new ResizeObserver(() => {
			if (following.current) toEnd();
		});
		resized.observe(document.body);
		return () => {
			removeEventListener("scroll", onScroll);
			removeEventListener(followEvent, onSent);
			resized.disconnect();
		};
	}, []);
	useLayoutEffect(() => {
		if (following.current) toEnd();
		else setBehind(true);
	}, [count, transcript.lastSeq]);
	const jump = () => {
		following.current = true;
		setBehind(false);
		toEnd();
	};
	return (
		<section class="transcript" role="log" aria-label="Transcript">
			{transcript.lost > 0 && <p class="muted">{transcript.lost} earlier events are no longer in the gateway's log.</p>}
			{count === 0 && <p class="muted empty">{empty ?? "Nothing said yet. Write a message below to start."}</p>}
			{transcript.items.map((item) => (
				<Entry key={item.id} item={item} />
			))}
			{behind && (
				<button type="button" class="jump" onClick={jump}>
					Jump to latest ↓
				</button>
			)}
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
							b.text ? (
								<details key={i} class="thinking">
									<summary>Thinking</summary>
									<p class="pre">{b.text}</p>
								</details>
							) : null
						) : b.text ? (
							<Markdown key={i} text={b.text} />
						) : null,
					)}
					{item.error && (
						<p class="error">
							{item.retries ? `Failed after ${item.retries} ${item.retries === 1 ? "retry" : "retries"}: ` : "Failed: "}
							{item.error}
						</p>
					)}
				</div>
			);
		case "tool":
			return <Tool item={item} />;
		case "client-tool":
			return (
				<div class={`tool card-tool ${item.isError ? "error" : ""}`}>
					<div class="tool-head">
						<span class="tool-name">Your program's tool</span>
						<code class="cmd">{item.name}</code>
						<span class={`badge ${item.status === "pending" ? "warn" : item.isError ? "bad" : "ok"}`}>
							{item.status === "pending" ? "waiting for the program" : item.status}
						</span>
					</div>
					<Folded label="Arguments" text={JSON.stringify(item.args ?? {}, null, 2)} />
					{item.output !== undefined && <Folded label="Result" text={item.output} />}
				</div>
			);
		case "output":
			return (
				<div class="tool output-card">
					<div class="tool-head">
						<span class="tool-name">Structured output</span>
						<span class={`badge ${item.error ? "bad" : "ok"}`}>{item.error ? "no valid output" : "valid"}</span>
					</div>
					{item.error ? (
						<p class="error">{item.error}</p>
					) : (
						<Folded label="Output" text={JSON.stringify(item.output, null, 2)} />
					)}
				</div>
			);
		case "answer":
			return (
				<div class="answer-record">
					<span class={`badge ${item.tone}`}>{item.outcome}</span> <span class="muted">{item.title}</span>
				</div>
			);
		case "notice":
			return (
				<div class={`notice ${item.level}`}>
					<p class={item.level === "error" ? "error" : "muted"}>{item.text}</p>
				</div>
			);
	}
}

/** What a tool call is about in one line: bash's command, a file tool's path, else its first argument. */
function summary(item: Extract<Item, { kind: "tool" }>): string {
	const args = (item.args ?? {}) as Record<string, unknown>;
	if (item.name === "bash") return `$ ${String(args.command ?? "")}`;
	const main = args.path ?? args.file_path ?? args.pattern ?? args.query ?? Object.values(args)[0];
	return typeof main === "string" ? main : "";
}

const stateText = { running: "running", done: "done", error: "failed" } as const;
const stateTone = { running: "info", done: "ok", error: "bad" } as const;

/** A tool call as a card: what it ran (monospace), its status, its output folded past a few lines. */
function Tool({ item }: { item: Extract<Item, { kind: "tool" }> }) {
	const line = summary(item);
	return (
		<div class={`tool ${item.status}`} aria-busy={item.status === "running"}>
			<div class="tool-head">
				{item.name === "bash" ? (
					<code class="cmd">{line}</code>
				) : (
					<>
						<span class="tool-name">{item.name}</span>
						{line && <code class="cmd">{line}</code>}
					</>
				)}
				<span class={`badge ${stateTone[item.status]}`}>{stateText[item.status]}</span>
			</div>
			{item.name !== "bash" && (
				<details class="args">
					<summary>Arguments</summary>
					<pre>{JSON.stringify(item.args, null, 2)}</pre>
				</details>
			)}
			{item.output && <Folded label="Output" text={item.output} />}
		</div>
	);
}

/** Monospace text, its first lines only until "Show all" (long outputs stay out of the way). */
function Folded({ label, text }: { label: string; text: string }) {
	const [all, setAll] = useState(false);
	const lines = text.replace(/\n$/, "").split("\n");
	const folded = !all && lines.length > foldLines;
	return (
		<div class="folded">
			<pre class="output" title={label}>
				{folded ? lines.slice(0, foldLines).join("\n") : text}
			</pre>
			{lines.length > foldLines && (
				<button type="button" class="link" aria-expanded={all} onClick={() => setAll(!all)}>
					{all ? "Show less" : `Show all ${lines.length} lines`}
				</button>
			)}
		</div>
	);
}
