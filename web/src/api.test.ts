import { describe, expect, it } from "vitest";
import { isSendableKey } from "./api";

describe("isSendableKey", () => {
  it("takes the keys `ukr keys add` makes", () => {
    expect(isSendableKey("ukr_Ab-9_xYz")).toBe(true);
  });
  it("refuses what fetch cannot put in a header, or a key with a space", () => {
    expect(isSendableKey("readkey_AAAA\u200b")).toBe(false); // a zero-width space pasted with it
    expect(isSendableKey("ключ")).toBe(false);
    expect(isSendableKey("two words")).toBe(false);
    expect(isSendableKey("")).toBe(false);
  });
});
