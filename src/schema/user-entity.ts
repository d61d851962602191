// The built-in User entity (docs/users.md): every schema has it, as Base44 apps do. Its records hold
// what may be shown of a person; the password's hash, codes and sessions are kept apart
// (users/users.ts). An app's own User declaration (entities/User.json) adds fields to these.

export const USER_ENTITY = "User";

/** The fields every User has, in record order, before an app's own. */
export const USER_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
  email: { type: "string", format: "email", description: "The user's email, lowercased: how it signs in. Unique." },
  full_name: { type: "string", description: "The user's name, as it gave it." },
  role: { type: "string", default: "user", description: 'What the user is to the app: "admin", "user" (the default) or any role the app uses.' },
  disabled: { type: "boolean", default: false, description: "A disabled user cannot sign in, and its sessions have ended." },
};

/**
 * The fields that say who a user is and what it may do. Besides the secret key, only an admin may
 * write them, through every route (docs/users.md): an app that lets users update their own User
 * record ("access" and an "rls" on `id`) must not let one make itself an admin, or take an email
 * it has not proven.
 */
const ADMIN_FIELDS = ["email", "role", "disabled"];
const ADMINS_ONLY = { user_condition: { role: "admin" } };

/** `field` with its writes (create and update) for admins only; who may read it stays the app's to say. */
function adminWritten(field: Record<string, unknown>): Record<string, unknown> {
  const rls = (field.rls ?? {}) as Record<string, unknown>;
  return { ...field, rls: { ...(rls.read === undefined ? {} : { read: rls.read }), write: ADMINS_ONLY } };
}

/**
 * The User declaration a schema serves: the built-in fields, then those an app's own declaration
 * adds; email unique; publishable keys (and so signed-in users) may not reach other users' records
 * through the entity routes unless the app's declaration says otherwise: a user reads and changes
 * itself through entities/User/me.
 */
export function userDeclaration(declared: Record<string, unknown> | undefined): Record<string, unknown> {
  const own = declared ?? {};
  const properties: Record<string, unknown> = { ...USER_FIELDS, ...((own.properties as Record<string, unknown> | undefined) ?? {}) };
  for (const name of ADMIN_FIELDS) properties[name] = adminWritten(properties[name] as Record<string, unknown>);
  const unique = [["email"], ...((own.unique as unknown[] | undefined) ?? []).filter((set) => JSON.stringify(set) !== '["email"]')];
  const required = [...new Set(["email", ...((own.required as string[] | undefined) ?? [])])];
  return { ...own, name: USER_ENTITY, type: "object", properties, required, unique, access: own.access ?? { publishable: [] } };
}
