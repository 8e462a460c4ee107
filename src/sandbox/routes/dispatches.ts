import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpFailure, notFound, readJson } from '../http.js';
import { organizationObject, ownerObject, type SeedToken } from '../seed.js';
import type { ApiParts } from './parts.js';

/** docs/service.md#repository-dispatch: POST /repos/{owner}/{repo}/dispatches emits repository_dispatch. */
export async function dispatch(
  parts: ApiParts,
  request: IncomingMessage,
  response: ServerResponse,
  token: SeedToken,
  owner: string,
  name: string,
): Promise<void> {
  const { store, seed, hooks, baseUrl } = parts;
  const org = store.organization(owner);
  const repository = org && store.repository(org, name);
  if (!org || !repository || ![...org.owners, ...org.members].includes(token.user)) throw notFound();
  const body = (await readJson(request, {})) as { event_type?: unknown; client_payload?: unknown };
  if (typeof body.event_type !== 'string' || body.event_type.length === 0 || body.event_type.length > 100) {
    throw new HttpFailure(422, {
      message: 'Validation Failed',
      errors: [{ resource: 'Dispatch', field: 'event_type', code: 'invalid', message: 'event_type must be a string of 1 to 100 characters' }],
    });
  }
  const user = seed.users.find((u) => u.login === token.user) ?? { login: token.user, id: 0 };
  const bases = { api: baseUrl, web: 'https://sandbox.invalid' };
  const sender = ownerObject(user.login, user.id, 'User', bases);
  const organization = organizationObject(org.login, org.id, bases);
  await hooks.dispatch(repository, organization, sender as unknown as Record<string, unknown>, body.event_type, body.client_payload);
  response.writeHead(204).end();
}
