import { type ApiKeyRecord, openKeyStore } from "../../../auth/key-store.ts";
import { InputError } from "../../../core/errors.ts";
import { type CommonOptions, output, requireTenant } from "../context.ts";

export const keysHelp = `cairn keys create --tenant T [--user U]   prints a new API key once (stored only as its SHA-256)
cairn keys list                          ids, bindings, created and revoked times (never the keys)
cairn keys revoke <id>                   the key stops working at once`;

/** `--tenant` and `--user` as the person typed them: the common defaults must not bind a key. */
export interface KeyFlags {
  readonly tenantGiven: boolean;
  readonly userGiven: boolean;
}

export async function keys(options: CommonOptions, positionals: readonly string[], flags: KeyFlags): Promise<number> {
  const [action, id] = positionals;
  const store = await openKeyStore(options.db);
  try {
    switch (action) {
      case "create": {
        if (!flags.tenantGiven) throw new InputError("--tenant", "name the tenant the key is bound to");
        const created = await store.create({
          tenant: requireTenant(options),
          ...(flags.userGiven ? { user: options.user } : {}),
        });
        output(options, { key: created.key, ...created.record }, () =>
          [
            created.key,
            `key ${created.record.id} for tenant ${created.record.tenant}` +
              (created.record.user ? `, user ${created.record.user}` : ", any user (X-Cairn-User header)"),
            "Shown once: Cairn keeps only its SHA-256. Send it as Authorization: Bearer <key>.",
          ].join("\n"),
        );
        return 0;
      }
      case "list": {
        const records = await store.list();
        output(options, { keys: records }, () =>
          records.length === 0 ? "no API keys (cairn keys create --tenant T)" : records.map(describe).join("\n"),
        );
        return 0;
      }
      case "revoke": {
        if (!id) throw new InputError("id", "give the key id: cairn keys revoke <id> (see cairn keys list)");
        const record = await store.revoke(id);
        output(options, record, () => `revoked ${describe(record)}`);
        return 0;
      }
      default:
        throw new InputError("keys", `unknown action ${action ?? "(none)"}: create, list or revoke`);
    }
  } finally {
    await store.close();
  }
}

function describe(record: ApiKeyRecord): string {
  const binding = `tenant ${record.tenant}, ${record.user ? `user ${record.user}` : "any user"}`;
  const state = record.revokedAt ? `revoked ${record.revokedAt}` : "active";
  return `${record.id}  ${binding}  created ${record.createdAt}  ${state}`;
}
