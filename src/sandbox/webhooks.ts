import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Repository } from '../api/types.js';
import { eventSpec } from '../webhook/catalogue.js';
import { buildDelivery, type ContentKind, DELIVERY_CAP_BYTES } from '../webhook/delivery.js';
import { examplePayload } from '../webhook/samples.js';
import type { WebhookOrganization } from '../api/types.js';

// Outgoing deliveries of the sandbox (docs/service.md#webhook-delivery): hooks created by an admin
// call on a repository, the organization, an app, an enterprise, a marketplace listing or a
// sponsored account; `ping` on creation; any catalogue event on demand, to the hooks whose kind the
// event's availability names (docs/service.md#event-catalogue); `repository_dispatch` for dispatches.

/** Where a hook is created: the availability column's Rep, Org, App, Ent, Mkt, Spn. */
export type HookTarget = 'repository' | 'organization' | 'app' | 'enterprise' | 'marketplace' | 'sponsors';

/**
 * Per kind of hook: its letter in the availability column, the value of the target-type header and
 * the `hook.type` of its ping. The header values are not published; these are GitHub's
 * (docs/sandbox.md#where-the-sandbox-decides).
 */
const HOOK_TARGETS: Record<HookTarget, { availability: string; header: string; type: string }> = {
  repository: { availability: 'Rep', header: 'repository', type: 'Repository' },
  organization: { availability: 'Org', header: 'organization', type: 'Organization' },
  app: { availability: 'App', header: 'integration', type: 'App' },
  enterprise: { availability: 'Ent', header: 'business', type: 'Business' },
  marketplace: { availability: 'Mkt', header: 'marketplace::listing', type: 'Marketplace::Listing' },
  sponsors: { availability: 'Spn', header: 'sponsors_listing', type: 'SponsorsListing' },
};

/** The ids the sandbox gives the app, enterprise, marketplace listing and sponsors listing it pretends to have. */
const FIXED_TARGET_ID = 1;

/** Sent to every app whether subscribed or not (docs/service.md#delivery-rules). */
const APP_ALWAYS = new Set(['installation', 'installation_repositories', 'service_app_authorization']);

export interface Hook {
  id: number;
  url: string;
  secret?: string;
  contentType: ContentKind;
  /** Event names, or `*` for all. */
  events: string[];
  target: HookTarget;
  /** The repository's name, for a repository hook. */
  repository?: string;
  targetId: number;
}

export type HookConfig = Omit<Hook, 'id' | 'target' | 'targetId'> & { target?: HookTarget };

export interface DeliveryReport {
  hook: number;
  delivery: string;
  status: number | null;
  error?: string;
}

export interface EmitResult {
  delivered: DeliveryReport[];
  /** Why nothing was sent, when the service would have sent nothing (docs/service.md#delivery-rules). */
  skipped?: string;
  /** Hooks subscribed to the event that did not get it, and why (availability, size as sent). */
  notDelivered?: { hook: number; reason: string }[];
  /** How the payload departs from a published example of the event and action. */
  adapted?: string;
}

export interface EmitRequest {
  event: string;
  action?: string;
  payload?: Record<string, unknown>;
  /** The repository (name) the event happens in; default: the payload's `repository.name`. */
  repository?: string;
  /** Tags created, deleted or pushed at once (docs/service.md#delivery-rules). */
  tags?: number;
  /** Pad the JSON payload to exactly this many bytes (docs/service.md#delivery-rules). */
  padToBytes?: number;
}

/** A request the sandbox refuses (answered 400 by the admin call). */
export class EmitError extends Error {}

/** What the registry needs of the sandbox around it. */
export interface HookContext {
  /** The organization whose hooks these are, as payloads carry it (`organizationObject` of seed.ts). */
  organization: WebhookOrganization;
  /** The API's origin, for the hook URLs a ping shows. */
  apiBase: string;
  findRepository: (name: string) => Repository | undefined;
  /** The sandbox's clock (ms since the epoch), for a hook's `created_at`. */
  now: () => number;
  /** With `tls`: the authorities a delivery over HTTPS trusts (Node's and the sandbox's own, so that a hook reaches its relay). */
  ca?: string[];
}

export class HookRegistry {
  private readonly hooks: Hook[] = [];
  private nextId = 1;
  private readonly context: HookContext;

  constructor(context: HookContext) {
    this.context = context;
  }

  list(): Hook[] {
    return [...this.hooks];
  }

  /** Creates a hook and sends it `ping` at once, as the service does, where `ping` is available to its kind. */
  async create(config: HookConfig): Promise<{ hook: Hook; ping: DeliveryReport | null }> {
    const target = config.target ?? 'organization';
    if (!(target in HOOK_TARGETS)) throw new EmitError(`target must be one of ${Object.keys(HOOK_TARGETS).join(', ')}`);
    let targetId = target === 'organization' ? this.context.organization.id : FIXED_TARGET_ID;
    let repository: string | undefined;
    if (target === 'repository') {
      const found = config.repository === undefined ? undefined : this.context.findRepository(config.repository);
      if (!found) throw new EmitError('a repository hook needs "repository": the name of a repository of the organization');
      targetId = found.id;
      repository = found.name;
    }
    for (const event of config.events) {
      if (event !== '*' && !eventSpec(event)) throw new EmitError(`unknown event "${event}"`);
    }
    const { target: _target, repository: _repository, ...rest } = config;
    const hook: Hook = { ...rest, id: this.nextId++, target, targetId, ...(repository ? { repository } : {}) };
    this.hooks.push(hook);
    if (!eventSpec('ping')?.availability.includes(HOOK_TARGETS[target].availability)) return { hook, ping: null };
    const ping = await this.deliver(hook, 'ping', Buffer.from(JSON.stringify(this.pingPayload(hook))));
    return { hook, ping: typeof ping === 'string' ? null : ping };
  }

  /**
   * What the service's ping carries (its published schema): the hook as created, with its API URLs
   * where it has some (a repository's or the organization's), and the repository or organization
   * it was created on.
   */
  private pingPayload(hook: Hook): Record<string, unknown> {
    const created = new Date(this.context.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const { organization } = this.context;
    const repository = hook.repository === undefined ? undefined : this.context.findRepository(hook.repository);
    const home = repository ? repository.url : hook.target === 'organization' ? `${this.context.apiBase}/orgs/${organization.login}` : undefined;
    const url = home && `${home}/hooks/${hook.id}`;
    return {
      zen: 'Keep it logically awesome.',
      hook_id: hook.id,
      hook: {
        type: HOOK_TARGETS[hook.target].type,
        id: hook.id,
        name: 'web',
        active: true,
        events: hook.events,
        config: { content_type: hook.contentType, url: hook.url, insecure_ssl: '0' },
        updated_at: created,
        created_at: created,
        ...(hook.target === 'app' ? { app_id: FIXED_TARGET_ID } : {}),
        ...(url ? { url, ...(repository ? { test_url: `${url}/test` } : {}), ping_url: `${url}/pings`, deliveries_url: `${url}/deliveries` } : {}),
        last_response: { code: null, status: 'unused', message: null },
      },
      ...(repository ? { repository } : {}),
      ...(repository || hook.target === 'organization' ? { organization } : {}),
    };
  }

  remove(id: number): boolean {
    const index = this.hooks.findIndex((hook) => hook.id === id);
    if (index >= 0) this.hooks.splice(index, 1);
    return index >= 0;
  }

  /** Sends an event to every hook that would get it, following docs/service.md#delivery-rules. */
  async emit(emit: EmitRequest): Promise<EmitResult> {
    const spec = eventSpec(emit.event);
    if (!spec) throw new EmitError(`unknown event "${emit.event}"`);
    if (emit.action !== undefined && typeof emit.action !== 'string') throw new EmitError('action must be a string');
    if (emit.repository !== undefined && typeof emit.repository !== 'string') throw new EmitError('repository must be a repository name');
    if (emit.tags !== undefined && !Number.isSafeInteger(emit.tags)) throw new EmitError('tags must be a whole number');
    if (emit.payload !== undefined && (typeof emit.payload !== 'object' || emit.payload === null || Array.isArray(emit.payload))) {
      throw new EmitError('payload must be a JSON object');
    }
    if (emit.action !== undefined && spec.action === 'none') {
      throw new EmitError(`${emit.event} events carry no action; leave "action" out`);
    }
    if (['create', 'delete', 'push'].includes(emit.event) && (emit.tags ?? 0) > 3) {
      return { delivered: [], skipped: `no ${emit.event} event when more than three tags change at once` };
    }
    const chosen = emit.payload ? { payload: emit.payload } : examplePayload(emit.event, emit.action);
    const payload = chosen.payload;
    if (emit.payload && emit.action !== undefined) payload.action = emit.action;
    const json = padded(payload, emit.padToBytes);
    const result: EmitResult = { delivered: [] };
    if (chosen.adapted) result.adapted = chosen.adapted;
    if (json.length > DELIVERY_CAP_BYTES) {
      return { ...result, skipped: `payload of ${json.length} bytes, over 25 MB (${DELIVERY_CAP_BYTES} bytes): not delivered` };
    }
    const action = typeof payload.action === 'string' ? payload.action : undefined;
    const repository = emit.repository ?? repositoryName(payload);
    const notDelivered: { hook: number; reason: string }[] = [];
    for (const hook of this.hooks) {
      if (!this.subscribed(hook, emit.event)) continue;
      const unavailable = unavailableReason(hook, emit.event, action, spec.availability);
      if (unavailable) {
        notDelivered.push({ hook: hook.id, reason: unavailable });
        continue;
      }
      if (hook.target === 'repository' && repository?.toLowerCase() !== hook.repository?.toLowerCase()) continue;
      const report = await this.deliver(hook, emit.event, json);
      if (typeof report === 'string') notDelivered.push({ hook: hook.id, reason: report });
      else result.delivered.push(report);
    }
    if (notDelivered.length > 0) result.notDelivered = notDelivered;
    return result;
  }

  /**
   * docs/service.md#repository-dispatch: a dispatch emits repository_dispatch whose action is the
   * event_type; `organization` is the repository's organization, as payloads carry one.
   */
  dispatch(
    repository: Repository,
    organization: WebhookOrganization,
    sender: Record<string, unknown>,
    eventType: string,
    clientPayload: unknown,
  ): Promise<EmitResult> {
    return this.emit({
      event: 'repository_dispatch',
      repository: repository.name,
      payload: {
        action: eventType,
        branch: repository.default_branch,
        client_payload: clientPayload ?? null,
        repository,
        organization,
        sender,
        installation: { id: 1, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' },
      },
    });
  }

  private subscribed(hook: Hook, event: string): boolean {
    if (hook.target === 'app' && APP_ALWAYS.has(event)) return true;
    return hook.events.includes('*') || hook.events.includes(event);
  }

  /** The delivery, or why it was not sent (the body as sent is over the cap). */
  private async deliver(hook: Hook, event: string, json: Buffer): Promise<DeliveryReport | string> {
    const delivery = buildDelivery({
      event,
      payload: json,
      contentType: hook.contentType,
      secret: hook.secret,
      hookId: String(hook.id),
      targetType: HOOK_TARGETS[hook.target].header,
      targetId: String(hook.targetId),
    });
    // The cap applies to the body actually sent: a form body is larger than its JSON.
    if (delivery.body.length > DELIVERY_CAP_BYTES) {
      return `a ${hook.contentType} body of ${delivery.body.length} bytes, over 25 MB (${DELIVERY_CAP_BYTES} bytes): not delivered`;
    }
    try {
      const status = await post(hook.url, delivery.headers, delivery.body, this.context.ca);
      return { hook: hook.id, delivery: delivery.id, status };
    } catch (error) {
      return { hook: hook.id, delivery: delivery.id, status: null, error: (error as Error).message };
    }
  }
}

/** Why `event` does not reach this kind of hook, per its availability and the checks rule; undefined if it does. */
function unavailableReason(hook: Hook, event: string, action: string | undefined, availability: string[]): string | undefined {
  const { availability: letter } = HOOK_TARGETS[hook.target];
  if (!availability.includes(letter)) {
    return `${event} is not delivered to ${hook.target} hooks (available to ${availability.join(' ')})`;
  }
  if (hook.target === 'repository' || hook.target === 'organization') {
    if (event === 'check_run' && !['created', 'completed'].includes(action ?? '')) {
      return `${hook.target} hooks get check_run only for created and completed, not "${action ?? ''}"`;
    }
    if (event === 'check_suite' && action !== 'completed') {
      return `${hook.target} hooks get check_suite only for completed, not "${action ?? ''}"`;
    }
  }
  return undefined;
}

/** The JSON text of `payload`, padded with a `padding` string to exactly `size` bytes when asked. */
function padded(payload: Record<string, unknown>, size: number | undefined): Buffer {
  if (size === undefined) return Buffer.from(JSON.stringify(payload));
  if (!Number.isSafeInteger(size) || size < 0) throw new EmitError('padToBytes must be a whole number of bytes');
  const base = Buffer.byteLength(JSON.stringify({ ...payload, padding: '' }));
  if (base > size) throw new EmitError(`the payload is already ${base} bytes with an empty padding; padToBytes must be at least that`);
  return Buffer.from(JSON.stringify({ ...payload, padding: 'x'.repeat(size - base) }));
}

function repositoryName(payload: Record<string, unknown>): string | undefined {
  const repository = payload.repository as { name?: unknown } | undefined;
  return typeof repository?.name === 'string' ? repository.name : undefined;
}

function post(url: string, headers: Record<string, string>, body: Buffer, ca: string[] | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const https = target.protocol === 'https:';
    const send = https ? httpsRequest : httpRequest;
    const request = send(target, { method: 'POST', headers, timeout: 10_000, ...(https && ca ? { ca } : {}) }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error('timed out after 10 s')));
    request.on('error', reject);
    request.end(body);
  });
}
