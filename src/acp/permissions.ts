import type {
	CreateElicitationResponse,
	PermissionOption,
	PermissionOptionKind,
	RequestPermissionOutcome,
} from "@agentclientprotocol/sdk";
import type { Schemas } from "../client/index.ts";

/**
 * A gateway approval (an extension's dialog) as an ACP permission request, and the editor's
 * choice back as the approval's answer. Each option is built together with the answer it means,
 * so the choice is looked up, never parsed; an unknown or cancelled choice denies.
 */

/** The part of the gateway's Approval this needs (openapi.yaml `Approval`). */
export type Approval = Pick<
	Schemas["Approval"],
	"id" | "method" | "title" | "message" | "options" | "placeholder" | "prefill" | "status"
>;

/** The body of POST …/approvals/{id} (openapi.yaml `ApprovalAnswer`). */
export type Answer = Schemas["ApprovalAnswer"];

export interface PermissionChoice {
	option: PermissionOption;
	answer: Answer;
}

const rejecting = /^(block|deny|denied|reject|no|cancel|abort|stop|never|disallow|don't|do not)\b/i;

/** A select option's kind by its words: "Block", "Deny", "No" … reject; anything else allows. */
export function optionKind(name: string): "allow" | "reject" {
	return rejecting.test(name.trim()) ? "reject" : "allow";
}

/**
 * The permission options for a confirm or select dialog, each with its answer. "Always" is
 * offered for allowing options only, as `remember: "session"`: the gateway honours it for
 * confirm and select (the same answer, at once, to this session's later dialogs with the same
 * method and title). Input and editor dialogs have none: ACP permissions carry no text.
 */
export function permissionChoices(approval: Approval): PermissionChoice[] {
	const choice = (optionId: string, name: string, kind: PermissionOptionKind, answer: Answer): PermissionChoice => ({
		option: { optionId, name, kind },
		answer,
	});
	if (approval.method === "confirm")
		return [
			choice("allow", "Allow", "allow_once", { confirmed: true }),
			choice("allow_always", "Always allow (this session)", "allow_always", { confirmed: true, remember: "session" }),
			choice("reject", "Reject", "reject_once", { confirmed: false }),
		];
	if (approval.method === "select") {
		const options = approval.options ?? [];
		const once = options.map((value, i) =>
			choice(`option:${i}`, value, optionKind(value) === "allow" ? "allow_once" : "reject_once", { value }),
		);
		const always = options
			.map((value, i) => ({ value, i }))
			.filter(({ value }) => optionKind(value) === "allow")
			.map(({ value, i }) =>
				choice(`always:${i}`, `${value} (always, this session)`, "allow_always", { value, remember: "session" }),
			);
		return [...once, ...always];
	}
	return [];
}

/**
 * The editor's outcome → the approval's answer. Cancelled, or an option id this request did not
 * offer, is a denial: confirm → `confirmed: false`, select → its first rejecting option, else
 * the dialog dismissed (`cancelled`, which extensions take as no).
 */
export function answerFor(approval: Approval, choices: PermissionChoice[], outcome: RequestPermissionOutcome): Answer {
	if (outcome.outcome === "selected") {
		const chosen = choices.find((c) => c.option.optionId === outcome.optionId);
		if (chosen) return chosen.answer;
	}
	return denial(approval);
}

export function denial(approval: Approval): Answer {
	if (approval.method === "confirm") return { confirmed: false };
	const reject = approval.options?.find((value) => optionKind(value) === "reject");
	return reject !== undefined ? { value: reject } : { cancelled: true };
}

/** The text an input/editor dialog asks for, as an ACP form elicitation with one string field. */
export function elicitationSchema(approval: Approval) {
	return {
		type: "object" as const,
		properties: {
			text: {
				type: "string" as const,
				title: approval.title,
				...(approval.placeholder ? { description: approval.placeholder } : {}),
				...(approval.prefill !== undefined ? { default: approval.prefill } : {}),
			},
		},
		required: ["text"],
	};
}

/** The editor's elicitation answer → the approval's: accepted text as the value, anything else dismisses. */
export function answerForElicitation(response: CreateElicitationResponse): Answer {
	if (response.action === "accept") {
		const text = (response as { content?: Record<string, unknown> | null }).content?.text;
		if (typeof text === "string") return { value: text };
	}
	return { cancelled: true };
}

/** The permission request's title: the dialog's title, and a confirm's message under it. */
export function permissionTitle(approval: Approval): string {
	return approval.message ? `${approval.title}\n\n${approval.message}` : approval.title;
}
