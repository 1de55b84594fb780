-- The Laravel service's tables as its migrations make them on MySQL and MariaDB (contract section 9),
-- in the SQL that Laravel's schema grammar (Illuminate\Database\Schema\Grammars\MySqlGrammar) writes
-- with config/database.php's defaults (utf8mb4, utf8mb4_unicode_ci, the server's engine: InnoDB):
-- id() is bigint unsigned auto_increment primary key, string() varchar(255), timestamps() two
-- nullable timestamp columns, foreignId() bigint unsigned, unique() and index() named
-- table_column_unique and table_column_index, constrained() a foreign key named
-- table_column_foreign (InnoDB gives it an index of that name). PostgreSQL's twin is
-- laravel-schema.postgres.sql; the comments there say which migration each table follows.

create table `users` (
  `id` bigint unsigned not null auto_increment primary key,
  `name` varchar(255) not null,
  `email` varchar(255) not null,
  `email_verified_at` timestamp null,
  `password` varchar(255) not null,
  `remember_token` varchar(100) null,
  `current_team_id` bigint unsigned null,
  `profile_photo_path` varchar(2048) null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `users` add unique `users_email_unique`(`email`);

-- Jetstream's teams, with a nullable owner and a unique slug (see the PostgreSQL file).
create table `teams` (
  `id` bigint unsigned not null auto_increment primary key,
  `user_id` bigint unsigned null,
  `name` varchar(255) not null,
  `slug` varchar(255) not null,
  `personal_team` tinyint(1) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `teams` add index `teams_user_id_index`(`user_id`);
alter table `teams` add unique `teams_slug_unique`(`slug`);

create table `team_user` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `user_id` bigint unsigned not null,
  `role` varchar(255) null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `team_user` add unique `team_user_team_id_user_id_unique`(`team_id`, `user_id`);

create table `personal_access_tokens` (
  `id` bigint unsigned not null auto_increment primary key,
  `tokenable_type` varchar(255) not null,
  `tokenable_id` bigint unsigned not null,
  `name` text not null,
  `token` varchar(64) not null,
  `abilities` text null,
  `last_used_at` timestamp null,
  `expires_at` timestamp null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `personal_access_tokens`
  add index `personal_access_tokens_tokenable_type_tokenable_id_index`(`tokenable_type`, `tokenable_id`);
alter table `personal_access_tokens` add unique `personal_access_tokens_token_unique`(`token`);

create table `environments` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `name` varchar(255) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `environments` add constraint `environments_team_id_foreign`
  foreign key (`team_id`) references `teams` (`id`) on delete cascade;

create table `servers` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `name` varchar(255) not null,
  `monthly_cost` decimal(20, 6) not null,
  `currency` varchar(3) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `servers` add constraint `servers_team_id_foreign`
  foreign key (`team_id`) references `teams` (`id`) on delete cascade;

create table `clients` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `name` varchar(255) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `clients` add constraint `clients_team_id_foreign`
  foreign key (`team_id`) references `teams` (`id`) on delete cascade;

create table `projects` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `client_id` bigint unsigned null,
  `name` varchar(255) not null,
  `slug` varchar(255) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `projects` add constraint `projects_team_id_foreign`
  foreign key (`team_id`) references `teams` (`id`) on delete cascade;
alter table `projects` add constraint `projects_client_id_foreign`
  foreign key (`client_id`) references `clients` (`id`) on delete set null;

create table `daemons` (
  `id` bigint unsigned not null auto_increment primary key,
  `environment_id` bigint unsigned not null,
  `server_id` bigint unsigned not null,
  `name` varchar(255) not null,
  `command` text not null,
  `username` varchar(255) not null,
  `directory` text not null,
  `processes` int unsigned not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `daemons` add constraint `daemons_environment_id_foreign`
  foreign key (`environment_id`) references `environments` (`id`) on delete cascade;
alter table `daemons` add constraint `daemons_server_id_foreign`
  foreign key (`server_id`) references `servers` (`id`) on delete cascade;

create table `costs` (
  `id` bigint unsigned not null auto_increment primary key,
  `team_id` bigint unsigned not null,
  `label` varchar(255) not null,
  `amount` decimal(20, 6) not null,
  `currency` varchar(3) not null,
  `created_at` timestamp null,
  `updated_at` timestamp null
) default character set utf8mb4 collate 'utf8mb4_unicode_ci';
alter table `costs` add constraint `costs_team_id_foreign`
  foreign key (`team_id`) references `teams` (`id`) on delete cascade;
