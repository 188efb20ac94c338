import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { get } from "../api/client.ts";
import type { Approval, ApprovalList, ToolCall, ToolCallList } from "../api/types.ts";
import { announce } from "./notify.ts";

/** Everything that waits on a person: dialogs to answer and client tool calls to answer by hand. */
export interface Pending {
	approvals: Approval[];
	toolCalls: ToolCall[];
	/** How many wait, of both kinds. */
	count: number;
	refresh: () => void;
}

const pollMs = 2000;

/**
 * The inbox across sessions, polled (an approvals:read key has no event stream to listen to). Tool
 * calls are read with sessions:read (a key that only answers approvals has none to answer).
 */
export function usePending(approvalsToo: boolean, toolCallsToo: boolean): Pending {
	const [approvals, setApprovals] = useState<Approval[]>([]);
	const [toolCalls, setToolCalls] = useState<ToolCall[]>([]);
	const known = useRef<Set<string> | undefined>(undefined);
	const knownCalls = useRef<Set<string> | undefined>(undefined);
	const refresh = useCallback(async () => {
		if (approvalsToo) {
			try {
				const list = await get<ApprovalList>("/v1/approvals?status=pending&limit=100");
				const fresh = list.approvals.filter((a) => known.current !== undefined && !known.current.has(a.id));
				known.current = new Set(list.approvals.map((a) => a.id));
				setApprovals(list.approvals);
				for (const approval of fresh) announce(approval.title, approval.id);
			} catch {
				// Shown as it was (the banner says when the gateway is gone); the next poll tries again.
			}
		}
		if (toolCallsToo) {
			try {
				const list = await get<ToolCallList>("/v1/tool-calls?status=pending");
				const fresh = list.toolCalls.filter((c) => knownCalls.current !== undefined && !knownCalls.current.has(c.id));
				knownCalls.current = new Set(list.toolCalls.map((c) => c.id));
				setToolCalls(list.toolCalls);
				for (const call of fresh) announce(`Your program's tool ${call.name} waits for an answer`, call.id);
			} catch {
				// As above.
			}
		}
	}, [approvalsToo, toolCallsToo]);
	useEffect(() => {
		void refresh();
		const timer = setInterval(refresh, pollMs);
		return () => clearInterval(timer);
	}, [refresh]);
	return { approvals, toolCalls, count: approvals.length + toolCalls.length, refresh };
}
