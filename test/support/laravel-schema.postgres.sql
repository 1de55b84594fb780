-- The Laravel service's tables as its migrations make them on PostgreSQL (contract section 9), in the
-- SQL that Laravel's schema grammar (Illuminate\Database\Schema\Grammars\PostgresGrammar) writes:
-- id() is bigserial primary key, string() varchar(255), timestamps() two nullable
-- timestamp(0) without time zone, foreignId() bigint, unique() and index() named table_column_unique
-- and table_column_index, constrained() a foreign key named table_column_foreign. PostgreSQL makes no
-- index for a foreign key, and neither does Laravel.

-- laravel/jetstream database/migrations/0001_01_01_000000_create_users_table.php (laravel/laravel's,
-- plus Jetstream's current_team_id and profile_photo_path).
create table "users" (
  "id" bigserial not null primary key,
  "name" varchar(255) not null,
  "email" varchar(255) not null,
  "email_verified_at" timestamp(0) without time zone null,
  "password" varchar(255) not null,
  "remember_token" varchar(100) null,
  "current_team_id" bigint null,
  "profile_photo_path" varchar(2048) null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "users" add constraint "users_email_unique" unique ("email");

-- laravel/jetstream 2020_05_21_100000_create_teams_table.php: user_id (the owner) is indexed and has
-- no foreign key. Two departures: user_id is nullable here (Jetstream's is not null; the contract
-- allows a team without owner), and the team has a unique slug (the API's path segment).
create table "teams" (
  "id" bigserial not null primary key,
  "user_id" bigint null,
  "name" varchar(255) not null,
  "slug" varchar(255) not null,
  "personal_team" boolean not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
create index "teams_user_id_index" on "teams" ("user_id");
alter table "teams" add constraint "teams_slug_unique" unique ("slug");

-- laravel/jetstream 2020_05_21_200000_create_team_user_table.php: no foreign keys.
create table "team_user" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "user_id" bigint not null,
  "role" varchar(255) null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "team_user" add constraint "team_user_team_id_user_id_unique" unique ("team_id", "user_id");

-- laravel/sanctum 2019_12_14_000001_create_personal_access_tokens_table.php: morphs('tokenable') is a
-- varchar type and a bigint id with one index on both; name is text in Sanctum 4's latest migration
-- (varchar(255) in earlier ones).
create table "personal_access_tokens" (
  "id" bigserial not null primary key,
  "tokenable_type" varchar(255) not null,
  "tokenable_id" bigint not null,
  "name" text not null,
  "token" varchar(64) not null,
  "abilities" text null,
  "last_used_at" timestamp(0) without time zone null,
  "expires_at" timestamp(0) without time zone null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
create index "personal_access_tokens_tokenable_type_tokenable_id_index"
  on "personal_access_tokens" ("tokenable_type", "tokenable_id");
alter table "personal_access_tokens" add constraint "personal_access_tokens_token_unique" unique ("token");

-- The service's own tables, written as its migrations would be: foreignId(...)->constrained()
-- ->cascadeOnDelete() for what a team owns and for a daemon's environment and server,
-- ->nullOnDelete() for a project's client; money as decimal(20, 6) (so that a row can hold an amount
-- with more decimals than the contract allows), currencies as string('currency', 3).
create table "environments" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "name" varchar(255) not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "environments" add constraint "environments_team_id_foreign"
  foreign key ("team_id") references "teams" ("id") on delete cascade;

create table "servers" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "name" varchar(255) not null,
  "monthly_cost" decimal(20, 6) not null,
  "currency" varchar(3) not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "servers" add constraint "servers_team_id_foreign"
  foreign key ("team_id") references "teams" ("id") on delete cascade;

create table "clients" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "name" varchar(255) not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "clients" add constraint "clients_team_id_foreign"
  foreign key ("team_id") references "teams" ("id") on delete cascade;

create table "projects" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "client_id" bigint null,
  "name" varchar(255) not null,
  "slug" varchar(255) not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "projects" add constraint "projects_team_id_foreign"
  foreign key ("team_id") references "teams" ("id") on delete cascade;
alter table "projects" add constraint "projects_client_id_foreign"
  foreign key ("client_id") references "clients" ("id") on delete set null;

create table "daemons" (
  "id" bigserial not null primary key,
  "environment_id" bigint not null,
  "server_id" bigint not null,
  "name" varchar(255) not null,
  "command" text not null,
  "username" varchar(255) not null,
  "directory" text not null,
  "processes" integer not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "daemons" add constraint "daemons_environment_id_foreign"
  foreign key ("environment_id") references "environments" ("id") on delete cascade;
alter table "daemons" add constraint "daemons_server_id_foreign"
  foreign key ("server_id") references "servers" ("id") on delete cascade;

create table "costs" (
  "id" bigserial not null primary key,
  "team_id" bigint not null,
  "label" varchar(255) not null,
  "amount" decimal(20, 6) not null,
  "currency" varchar(3) not null,
  "created_at" timestamp(0) without time zone null,
  "updated_at" timestamp(0) without time zone null
);
alter table "costs" add constraint "costs_team_id_foreign"
  foreign key ("team_id") references "teams" ("id") on delete cascade;
