import { z } from "@hono/zod-openapi";

/** The `{id}` of every session-scoped path, shared by all feature folders. */
export const SessionParams = z.object({
	id: z.string().openapi({ param: { name: "id", in: "path" }, example: "ses_Qm9wYXJ0aWFs" }),
});
