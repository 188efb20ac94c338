/** The credential lives in this tab's sessionStorage only: never localStorage, a cookie or a URL. */
const key = "pi-gateway-console-credential";

export const storedCredential = () => sessionStorage.getItem(key) ?? undefined;
export const storeCredential = (token: string) => sessionStorage.setItem(key, token);
export const forgetCredential = () => sessionStorage.removeItem(key);
