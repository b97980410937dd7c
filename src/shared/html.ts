/** Text made safe to place inside HTML (mail bodies): the five characters HTML gives meaning, as entities. */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
