/** The list resources, keyed as in the routes. */
export const LIST_RESOURCES = ['projects', 'daemons'] as const;
export type ListResource = (typeof LIST_RESOURCES)[number];
