import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { syncSuccessorKey } from '../table/keys.ts';
import type { LeaseItem } from '../write/lease.ts';
import { conditionally } from '../write/writer.ts';

/** How long after the holder's announced end a successor's place is kept for it (one lease). */
const PLACE_KEPT_MS = 60_000;

/**
 * Takes the successor's place: the one invocation that waits for the sync's holder to end, so
 * every other invocation in the meantime leaves at once (the function runs three at most). The
 * place lapses a minute after the holder's announced end, so a successor that died waiting never
 * blocks the next handover. True when this invocation has it.
 */
export async function takeSuccessorPlace(
  doc: DynamoDBDocumentClient,
  tableName: string,
  holder: LeaseItem,
  invocation: string,
): Promise<boolean> {
  const now = Date.now();
  return conditionally(
    doc.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          ...syncSuccessorKey(),
          invocation,
          after: holder.lock_owner,
          expires_at: (holder.ends_at ?? now) + PLACE_KEPT_MS,
        },
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
        ExpressionAttributeValues: { ':now': now },
      }),
    ),
  );
}
