// Session unit properties a config may set: the unit-property builder's allowlist decides.
import { limitProperties } from '../systemd/index.ts';

/** Undefined when `name = value` is an allowed session property, else why not. */
export function checkSessionProperty(name: string, value: unknown): string | undefined {
  try {
    limitProperties({ [name]: value });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
