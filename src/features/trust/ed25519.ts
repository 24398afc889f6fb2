import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";

/**
 * The only module that loads `node:crypto` for signatures; everything else imports it lazily
 * (`await import`), so that commands that neither sign nor verify never pay for it at start-up
 * (test/cli/startup.test.ts). Keys travel as base64url: the raw 32-byte public key, the
 * 64-byte signature; private keys as PKCS#8 PEM.
 */

export interface KeyPair {
  /** The public key, base64url of its 32 raw bytes. */
  key: string;
  /** The private key, PKCS#8 PEM. */
  pem: string;
}

/**
 * The pair comes out of the key generation already encoded. Exporting the key objects it would
 * otherwise return deadlocked Node 20 about one run in 300 (`id new` hung at its end, its output
 * printed): a garbage collection during the export ran the finished generation job's destructor,
 * which waits for the key's mutex that the export holds.
 */
export function generateKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519", {
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { key: rawFromSpki(publicKey), pem: privateKey };
}

export interface Signer {
  /** The public key, base64url. */
  key: string;
  /** Signs text (as UTF-8), returns the signature as base64url. */
  sign(text: string): string;
}

/** A signer from a private key's PEM; throws when the PEM is not an Ed25519 private key. */
export function signerFromPem(pem: string): Signer {
  const privateKey = createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== "ed25519") throw new Error("not an Ed25519 private key");
  return {
    key: rawPublicKey(createPublicKey(privateKey)),
    sign: (text) => sign(null, Buffer.from(text), privateKey).toString("base64url"),
  };
}

const publicKeys = new Map<string, KeyObject>();

/** Whether `signature` is `key`'s over `text`; false for anything malformed, never a throw. */
export function verifySignature(key: string, text: string, signature: string): boolean {
  try {
    let publicKey = publicKeys.get(key);
    if (!publicKey) {
      publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: key }, format: "jwk" });
      publicKeys.set(key, publicKey);
    }
    return verify(null, Buffer.from(text), publicKey, Buffer.from(signature, "base64url"));
  } catch {
    return false;
  }
}

function rawPublicKey(publicKey: KeyObject): string {
  return rawFromSpki(publicKey.export({ type: "spki", format: "der" }));
}

/** An Ed25519 SPKI (DER) ends with the raw 32-byte key, after a fixed 12-byte header. */
function rawFromSpki(der: Buffer): string {
  return der.subarray(-32).toString("base64url");
}

/**
 * A key's fingerprint to compare out of band (read aloud, pasted in another channel): SHA-256
 * of the raw key, as `ssh-keygen -l` prints one (`SHA256:` and base64 without padding).
 */
export function fingerprint(key: string): string {
  const digest = createHash("sha256").update(Buffer.from(key, "base64url")).digest("base64");
  return `SHA256:${digest.replace(/=+$/, "")}`;
}
