-- etl.fits_type (error path only), third take: a value fits a type when PostgreSQL can assign it, as an INSERT
-- would. Only a length modifier (varchar(n), char(n), bit(n), varbit(n)) makes an explicit cast cut a value
-- short, so for those the length must survive; numeric(p,s) and timestamp(p) round on INSERT too, and so fit.
CREATE OR REPLACE FUNCTION etl.fits_type(value text, type_name text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  base regtype := type_name::regtype;
  ok boolean;
BEGIN
  IF value IS NULL THEN
    RETURN true;
  END IF;
  IF base IN ('character varying'::regtype, 'character'::regtype, 'bit'::regtype, 'bit varying'::regtype) THEN
    EXECUTE format('SELECT length(CAST(%L AS %s)) = length(CAST(CAST(%L AS %s) AS %s))', value, base::text, value, base::text, type_name) INTO ok;
    RETURN ok;
  END IF;
  EXECUTE format('SELECT CAST(CAST(%L AS %s) AS %s)', value, base::text, type_name);
  RETURN true;
EXCEPTION WHEN others THEN
  RETURN false;
END;
$$;
