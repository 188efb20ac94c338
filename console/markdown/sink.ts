import DOMPurify from "dompurify";
import { Marked } from "marked";

/**
 * The one place model output becomes HTML. marked renders Markdown, with any raw HTML in it shown
 * as text (the model never writes markup of its own; nothing of it is even parsed as HTML, so the
 * CSP has no inline handler to refuse); DOMPurify then sanitizes what marked made (no style,
 * images, forms or frames; no javascript: links; links open with rel=noopener noreferrer in a new
 * tab). If rendering throws, the text is shown as text. Every other string reaches the DOM as text.
 */
const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => escapes[c] ?? c);

const marked = new Marked({ gfm: true, breaks: true, renderer: { html: ({ text }) => escapeHtml(text) } });

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
	if (node.tagName === "A") {
		node.setAttribute("target", "_blank");
		node.setAttribute("rel", "noopener noreferrer");
	}
});

const config = {
	FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "video", "audio", "iframe"],
	FORBID_ATTR: ["style", "class", "id"],
	ALLOW_DATA_ATTR: false,
};

export function renderMarkdown(target: HTMLElement, text: string): void {
	try {
		const html = marked.parse(text, { async: false });
		target.innerHTML = DOMPurify.sanitize(html, config);
	} catch {
		target.textContent = text;
	}
}
