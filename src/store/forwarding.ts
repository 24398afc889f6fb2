import type { Message } from "../core/message.js";
import type { ChannelMeta } from "../core/meta.js";
import type {
  Capabilities,
  ChannelInfo,
  FenceResult,
  PathLeaseInfo,
  PostResult,
  PresenceInfo,
  ReadResult,
  Receipts,
  SearchResult,
  Store,
  TaskInfo,
  ThreadNode,
  WaitResult,
} from "./types.js";

/**
 * A store that hands every operation to another, arguments untouched: the base of the layers
 * that change a few (the identity guard, the signed store). A new `Store` method is forwarded
 * here once, so a layer cannot drop an option it was written before (as a `peek` that lost
 * its `archived` did).
 */
export class ForwardingStore implements Store {
  readonly updateMeta?: Store["updateMeta"];
  readonly archive?: Store["archive"];
  readonly prune?: Store["prune"];
  readonly touch?: Store["touch"];
  readonly publishedKeys?: Store["publishedKeys"];
  readonly attestRead?: Store["attestRead"];

  constructor(protected readonly inner: Store) {
    if (inner.updateMeta) this.updateMeta = inner.updateMeta.bind(inner);
    if (inner.archive) this.archive = inner.archive.bind(inner);
    if (inner.prune) this.prune = inner.prune.bind(inner);
    if (inner.touch) this.touch = inner.touch.bind(inner);
    if (inner.publishedKeys) this.publishedKeys = inner.publishedKeys;
    if (inner.attestRead) this.attestRead = inner.attestRead.bind(inner);
  }

  get capabilities(): Capabilities {
    return this.inner.capabilities;
  }

  get location(): string {
    return this.inner.location;
  }

  init(...a: Parameters<Store["init"]>): Promise<ChannelMeta> {
    return this.inner.init(...a);
  }

  channels(...a: Parameters<Store["channels"]>): Promise<ChannelInfo[]> {
    return this.inner.channels(...a);
  }

  roster(...a: Parameters<Store["roster"]>): Promise<ChannelMeta> {
    return this.inner.roster(...a);
  }

  post(...a: Parameters<Store["post"]>): Promise<PostResult> {
    return this.inner.post(...a);
  }

  read(...a: Parameters<Store["read"]>): Promise<ReadResult> {
    return this.inner.read(...a);
  }

  peek(...a: Parameters<Store["peek"]>): Promise<Message[]> {
    return this.inner.peek(...a);
  }

  cursor(...a: Parameters<Store["cursor"]>): Promise<number> {
    return this.inner.cursor(...a);
  }

  wait(...a: Parameters<Store["wait"]>): Promise<WaitResult> {
    return this.inner.wait(...a);
  }

  watch(...a: Parameters<Store["watch"]>): AsyncIterable<Message> {
    return this.inner.watch(...a);
  }

  addTask(...a: Parameters<Store["addTask"]>): Promise<TaskInfo> {
    return this.inner.addTask(...a);
  }

  tasks(...a: Parameters<Store["tasks"]>): Promise<TaskInfo[]> {
    return this.inner.tasks(...a);
  }

  claim(...a: Parameters<Store["claim"]>): Promise<TaskInfo> {
    return this.inner.claim(...a);
  }

  renew(...a: Parameters<Store["renew"]>): Promise<TaskInfo> {
    return this.inner.renew(...a);
  }

  done(...a: Parameters<Store["done"]>): Promise<TaskInfo> {
    return this.inner.done(...a);
  }

  release(...a: Parameters<Store["release"]>): Promise<TaskInfo> {
    return this.inner.release(...a);
  }

  fence(...a: Parameters<Store["fence"]>): Promise<FenceResult> {
    return this.inner.fence(...a);
  }

  createStructuredTask(...a: Parameters<Store["createStructuredTask"]>): Promise<TaskInfo> {
    return this.inner.createStructuredTask(...a);
  }

  changeStructuredTask(...a: Parameters<Store["changeStructuredTask"]>): Promise<TaskInfo> {
    return this.inner.changeStructuredTask(...a);
  }

  addPathLease(...a: Parameters<Store["addPathLease"]>): Promise<PathLeaseInfo> {
    return this.inner.addPathLease(...a);
  }

  pathLeases(...a: Parameters<Store["pathLeases"]>): Promise<PathLeaseInfo[]> {
    return this.inner.pathLeases(...a);
  }

  renewPathLease(...a: Parameters<Store["renewPathLease"]>): Promise<PathLeaseInfo> {
    return this.inner.renewPathLease(...a);
  }

  releasePathLease(...a: Parameters<Store["releasePathLease"]>): Promise<PathLeaseInfo> {
    return this.inner.releasePathLease(...a);
  }

  receipts(...a: Parameters<Store["receipts"]>): Promise<Receipts> {
    return this.inner.receipts(...a);
  }

  explain(...a: Parameters<Store["explain"]>): Promise<Receipts> {
    return this.inner.explain(...a);
  }

  waitFor(...a: Parameters<Store["waitFor"]>): Promise<Receipts> {
    return this.inner.waitFor(...a);
  }

  notify(...a: Parameters<Store["notify"]>): Promise<void> {
    return this.inner.notify(...a);
  }

  who(...a: Parameters<Store["who"]>): Promise<PresenceInfo[]> {
    return this.inner.who(...a);
  }

  search(...a: Parameters<Store["search"]>): Promise<SearchResult> {
    return this.inner.search(...a);
  }

  thread(...a: Parameters<Store["thread"]>): Promise<ThreadNode> {
    return this.inner.thread(...a);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
