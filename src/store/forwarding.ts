import { callOperation, defineOperations, OPERATIONS } from "./operations.js";
import type { Capabilities, Store } from "./types.js";

/**
 * A store that hands every operation to another, arguments untouched: the base of the layers
 * that change a few (the identity guard, the signed store). Its methods come from the operation
 * table (src/store/operations.ts), one per row, so a layer cannot drop an operation or an option
 * it was written before (as a `peek` that lost its `archived` did). Their types are the `Store`
 * contract's, through the interface of the same name.
 */
export interface ForwardingStore extends Store {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above types the methods this class puts on its prototype.
export class ForwardingStore implements Store {
  readonly updateMeta?: Store["updateMeta"];
  readonly retention?: Store["retention"];
  readonly touch?: Store["touch"];
  readonly publishedKeys?: Store["publishedKeys"];
  readonly attestRead?: Store["attestRead"];
  readonly chatpy07?: Store["chatpy07"];

  constructor(protected readonly inner: Store) {
    if (inner.updateMeta) this.updateMeta = inner.updateMeta.bind(inner);
    if (inner.retention) this.retention = inner.retention;
    if (inner.touch) this.touch = inner.touch.bind(inner);
    if (inner.publishedKeys) this.publishedKeys = inner.publishedKeys;
    if (inner.attestRead) this.attestRead = inner.attestRead.bind(inner);
    if (inner.chatpy07) this.chatpy07 = inner.chatpy07;
  }

  get capabilities(): Capabilities {
    return this.inner.capabilities;
  }

  get location(): string {
    return this.inner.location;
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  static {
    defineOperations(ForwardingStore.prototype, OPERATIONS, function (row, args) {
      return callOperation(this.inner, row.method, args);
    });
  }
}
