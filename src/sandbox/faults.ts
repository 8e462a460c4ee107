/** What the sandbox can be told to get wrong (reliability tests). Set by option or `POST /_sandbox/faults`. */
export interface FaultSettings {
  /** Answer the next N API requests with `failStatus` (default 503) before behaving. */
  failNext?: number;
  failStatus?: number;
  /** Only requests whose path contains this are failed or dropped. */
  failPath?: string;
  /** Drop the next N API connections without an answer. */
  dropNext?: number;
  /** Cut each of the next `cutTimes` archive responses after this many bytes. */
  cutAfterBytes?: number;
  cutTimes?: number;
  /** Archive offsets at which to cut the stream, each once (the response that covers it is cut there). */
  cutAtOffsets?: number[];
  /** Storage holds each archive answer this many milliseconds before its first byte (a slow start). */
  storageStallMs?: number;
  /** Serve archive bytes no faster than this. */
  throttleBytesPerSecond?: number;
  /** Storage ignores Range and advertises no Accept-Ranges. */
  noRange?: boolean;
  /** Storage answers the next N archive requests 403 (as for an expired URL). */
  storageForbiddenNext?: number;
  /** The same, but only for requests that resume with Range (a URL that expired mid-download). */
  storageForbiddenOnResume?: number;
  /** Serve archives with one byte flipped half-way: the download completes, verification must fail. */
  corruptArchive?: boolean;
  /** Answer the next N resumes (requests with Range) with a 206 from a different file, ignoring If-Range. */
  spliceNext?: number;
  /** Start the next N migrations but drop the connection instead of answering (a lost 201). */
  loseStartAnswerNext?: number;
  /** Cut the next N API answers (those whose path contains `failPath`) half-way through their body. */
  cutAnswerNext?: number;
}

export class Faults {
  private settings: FaultSettings = {};

  set(settings: FaultSettings): void {
    this.settings = { ...this.settings, ...settings };
  }

  clear(): void {
    this.settings = {};
  }

  snapshot(): FaultSettings {
    return { ...this.settings };
  }

  get throttleBytesPerSecond(): number | undefined {
    return this.settings.throttleBytesPerSecond;
  }

  get storageStallMs(): number {
    return this.settings.storageStallMs ?? 0;
  }

  get noRange(): boolean {
    return Boolean(this.settings.noRange);
  }

  get corruptArchive(): boolean {
    return Boolean(this.settings.corruptArchive);
  }

  takeSplice(): boolean {
    if (!this.settings.spliceNext) return false;
    this.settings.spliceNext--;
    return true;
  }

  /** The status to fail this API request with, if a failure is due. */
  takeFailure(path: string): number | undefined {
    if (!this.settings.failNext || !this.matches(path)) return undefined;
    this.settings.failNext--;
    return this.settings.failStatus ?? 503;
  }

  takeLostStartAnswer(): boolean {
    if (!this.settings.loseStartAnswerNext) return false;
    this.settings.loseStartAnswerNext--;
    return true;
  }

  takeCutAnswer(path: string): boolean {
    if (!this.settings.cutAnswerNext || !this.matches(path)) return false;
    this.settings.cutAnswerNext--;
    return true;
  }

  takeDrop(path: string): boolean {
    if (!this.settings.dropNext || !this.matches(path)) return false;
    this.settings.dropNext--;
    return true;
  }

  /** Bytes after which to cut an archive response serving `start`..`end`, if a cut is due. */
  takeCut(start: number, end: number): number | undefined {
    const offsets = this.settings.cutAtOffsets;
    const at = offsets?.findIndex((offset) => offset > start && offset <= end) ?? -1;
    if (offsets && at >= 0) {
      const [offset] = offsets.splice(at, 1);
      return (offset as number) - start;
    }
    const { cutAfterBytes, cutTimes } = this.settings;
    if (cutAfterBytes === undefined || cutTimes === 0) return undefined;
    if (cutTimes !== undefined) this.settings.cutTimes = cutTimes - 1;
    return cutAfterBytes;
  }

  takeStorageForbidden(resuming: boolean): boolean {
    if (resuming && this.settings.storageForbiddenOnResume) {
      this.settings.storageForbiddenOnResume--;
      return true;
    }
    if (!this.settings.storageForbiddenNext) return false;
    this.settings.storageForbiddenNext--;
    return true;
  }

  private matches(path: string): boolean {
    return !this.settings.failPath || path.includes(this.settings.failPath);
  }
}
