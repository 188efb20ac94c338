import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { get } from "../api/client.ts";
import type { Approval, ApprovalList } from "../api/types.ts";
import { announce } from "./notify.ts";

export interface Pending {
	approvals: Approval[];
	refresh: () => void;
}

const pollMs = 2000;

/** The inbox across sessions, polled (an approvals:read key has no event stream to listen to). */
export function usePendingApprovals(enabled: boolean): Pending {
	const [approvals, setApprovals] = useState<Approval[]>([]);
	const known = useRef<Set<string> | undefined>(undefined);
	const refresh = useCallback(async () => {
		if (!enabled) return;
		try {
			const list = await get<ApprovalList>("/v1/approvals?status=pending&limit=100");
			const fresh = list.approvals.filter((a) => known.current !== undefined && !known.current.has(a.id));
			known.current = new Set(list.approvals.map((a) => a.id));
			setApprovals(list.approvals);
			for (const approval of fresh) announce(approval);
		} catch {
			// Shown as it was; the next poll tries again.
		}
	}, [enabled]);
	useEffect(() => {
		void refresh();
		const timer = setInterval(refresh, pollMs);
		return () => clearInterval(timer);
	}, [refresh]);
	return { approvals, refresh };
}
