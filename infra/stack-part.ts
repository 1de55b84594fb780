import { Construct } from 'constructs';

/**
 * A part of the stack (the table, the functions, the HTTP API, the alarms): a construct that
 * groups code, not identity. TeamResourcesStack leaves a part's own id out of the logical ids of
 * the resources inside it, so they keep the ids they had when the stack created them directly,
 * and a deployed table, API or custom domain is updated in place, never replaced.
 */
export class StackPart extends Construct {}
