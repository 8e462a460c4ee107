import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Repository } from '../api/types.js';
import { eventSpec } from '../webhook/catalogue.js';
import { buildDelivery, type ContentKind, MAX_PAYLOAD_BYTES } from '../webhook/delivery.js';
import { samplePayload } from '../webhook/samples.js';

// Outgoing deliveries of the sandbox (docs/service.md#webhook-delivery, #delivery-rules): hooks
// created by an admin call, `ping` on creation (#operations-and-events), any catalogue event on
// demand, and `repository_dispatch` for dispatches (#repository-dispatch).

export interface Hook {
  id: number;
  url: string;
  secret?: string;
  contentType: ContentKind;
  /** Event names, or `*` for all. */
  events: string[];
}

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
}

export interface EmitRequest {
  event: string;
  action?: string;
  payload?: Record<string, unknown>;
  /** Tags created, deleted or pushed at once (docs/service.md#delivery-rules rule 2). */
  tags?: number;
  /** Pad the payload to this size in bytes (docs/service.md#delivery-rules rule 1). */
  padToBytes?: number;
}

export class HookRegistry {
  private readonly hooks: Hook[] = [];
  private nextId = 1;
  private readonly targetId: number;

  constructor(targetId: number) {
    this.targetId = targetId;
  }

  list(): Hook[] {
    return [...this.hooks];
  }

  /** Creates a hook and sends it `ping` at once, as the service does. */
  async create(config: Omit<Hook, 'id'>): Promise<{ hook: Hook; ping: DeliveryReport }> {
    const hook: Hook = { ...config, id: this.nextId++ };
    this.hooks.push(hook);
    const payload = {
      zen: 'Keep it logically awesome.',
      hook_id: hook.id,
      hook: { type: 'Organization', id: hook.id, name: 'web', active: true, events: hook.events, config: { content_type: hook.contentType, url: hook.url, insecure_ssl: '0' } },
    };
    const ping = await this.deliver(hook, 'ping', payload);
    return { hook, ping };
  }

  remove(id: number): boolean {
    const index = this.hooks.findIndex((hook) => hook.id === id);
    if (index >= 0) this.hooks.splice(index, 1);
    return index >= 0;
  }

  /** Sends an event to every hook subscribed to it, following the delivery rules of docs/service.md#delivery-rules. */
  async emit(emit: EmitRequest): Promise<EmitResult> {
    if (['create', 'delete', 'push'].includes(emit.event) && (emit.tags ?? 0) > 3) {
      return { delivered: [], skipped: `no ${emit.event} event when more than three tags change at once` };
    }
    const payload = emit.payload ?? samplePayload(emit.event, emit.action);
    if (emit.payload && emit.action !== undefined) payload.action = emit.action;
    if (emit.padToBytes) payload.padding = 'x'.repeat(Math.max(0, emit.padToBytes - Buffer.byteLength(JSON.stringify(payload))));
    if (Buffer.byteLength(JSON.stringify(payload)) > MAX_PAYLOAD_BYTES) {
      return { delivered: [], skipped: 'payload over 25 MB: not delivered' };
    }
    const targets = this.hooks.filter((hook) => hook.events.includes('*') || hook.events.includes(emit.event));
    const delivered: DeliveryReport[] = [];
    for (const hook of targets) delivered.push(await this.deliver(hook, emit.event, payload));
    return { delivered };
  }

  /** docs/service.md#repository-dispatch: a dispatch emits repository_dispatch whose action is the event_type. */
  dispatch(repository: Repository, sender: Record<string, unknown>, eventType: string, clientPayload: unknown): Promise<EmitResult> {
    return this.emit({
      event: 'repository_dispatch',
      payload: {
        action: eventType,
        branch: repository.default_branch,
        client_payload: clientPayload ?? null,
        repository,
        organization: repository.owner,
        sender,
        installation: { id: 1, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' },
      },
    });
  }

  private async deliver(hook: Hook, event: string, payload: unknown): Promise<DeliveryReport> {
    if (!eventSpec(event)) throw new Error(`unknown event ${event}`);
    const delivery = buildDelivery({
      event,
      payload,
      contentType: hook.contentType,
      secret: hook.secret,
      hookId: String(hook.id),
      targetType: 'organization',
      targetId: String(this.targetId),
    });
    try {
      const status = await post(hook.url, delivery.headers, delivery.body);
      return { hook: hook.id, delivery: delivery.id, status };
    } catch (error) {
      return { hook: hook.id, delivery: delivery.id, status: null, error: (error as Error).message };
    }
  }
}

function post(url: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(target, { method: 'POST', headers, timeout: 10_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error('timed out after 10 s')));
    request.on('error', reject);
    request.end(body);
  });
}
