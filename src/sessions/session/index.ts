/** One session: its pi child, command channel, dialogs in flight and status. The room's one door. */

export type { FolderRestoreReport } from "./folder-report.ts";
export { unwrap } from "./pi-answer.ts";
export { type Session, SessionStatus } from "./session.ts";
export { UiState } from "./ui-state.ts";
